/**
 * The task state machine (docs/architecture.md, "The task state machine"). Every state change
 * of a task goes through {@link assertTransition}; the allowed moves are this one table, and the
 * store's schema holds the states (migration 6: CHECK constraints).
 *
 * States use the A2A v1.0 `TaskState` names without the `TASK_STATE_` prefix.
 */
export type TaskState =
  | 'SUBMITTED'
  | 'WORKING'
  | 'INPUT_REQUIRED'
  | 'COMPLETED'
  | 'FAILED'
  | 'CANCELED'
  | 'REJECTED';

export const TASK_STATES: readonly TaskState[] = [
  'SUBMITTED',
  'WORKING',
  'INPUT_REQUIRED',
  'COMPLETED',
  'FAILED',
  'CANCELED',
  'REJECTED',
];

/** Why a task failed; a deadline failure keeps the token live so a late reply is kept (docs/architecture.md). */
export type FailedBy = 'deadline' | 'dispatch' | 'agent';

export const FAILED_BY: readonly FailedBy[] = ['deadline', 'dispatch', 'agent'];

/** Terminal states: nothing moves a task out of them but the operator's retry edge below (late replies are recorded, not applied). */
export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set(['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED']);

/** States in which the agent owes a reply: the deadline sweep and the reply gates treat these as open. */
export const AWAITING_AGENT: ReadonlySet<TaskState> = new Set(['SUBMITTED', 'WORKING']);

/**
 * A guarded edge: allowed only for a task the guard accepts, and only when the caller names the
 * edge (so no other move can take it by accident).
 */
interface GuardedEdge {
  to: TaskState;
  edge: TransitionEdge;
  /** Whether the task may take the edge; `why` says what it requires. */
  guard: (t: { failedBy: FailedBy | null }) => boolean;
  why: string;
}

/** The named edges of the table; every other move is unnamed. */
export type TransitionEdge = 'operator-retry';

const ALLOWED: Record<TaskState, readonly TaskState[]> = {
  // SUBMITTED: stored, the webhook has not accepted the turn yet. The agent may hold the job before
  // the bridge knows it (its reply can beat the webhook's 2xx), so every reply status applies here
  // as from WORKING: REJECTED is the agent declining the task (`status: rejected`), which A2A v1.0
  // §4.1.3 TaskState allows "during initial task creation".
  SUBMITTED: ['WORKING', 'INPUT_REQUIRED', 'COMPLETED', 'FAILED', 'CANCELED', 'REJECTED'],
  // WORKING: the agent has the turn; it may also answer `working` (a progress note, no move).
  // REJECTED: `status: rejected`, the agent "has determined it can't or won't proceed" (A2A v1.0
  // §4.1.3 TaskState, TASK_STATE_REJECTED) — it declines, distinct from FAILED (it tried and failed).
  WORKING: ['INPUT_REQUIRED', 'COMPLETED', 'FAILED', 'CANCELED', 'REJECTED'],
  // INPUT_REQUIRED: the caller's answer opens the next turn, stored before its dispatch.
  INPUT_REQUIRED: ['SUBMITTED', 'CANCELED', 'FAILED'],
  COMPLETED: [],
  FAILED: [],
  CANCELED: [],
  REJECTED: [],
};

const GUARDED: Partial<Record<TaskState, readonly GuardedEdge[]>> = {
  // `a2a-mailbridge retry`: a task whose webhook was never accepted goes back to SUBMITTED with a
  // new dispatch; the agent never had the job, so nothing it said is overridden.
  FAILED: [{ to: 'SUBMITTED', edge: 'operator-retry', guard: (t) => t.failedBy === 'dispatch', why: 'only a task that failed by dispatch' }],
};

export function isTerminal(state: TaskState): boolean {
  return TERMINAL_STATES.has(state);
}

/** Whether the table allows the unnamed move `from` → `to`. */
export function canTransition(from: TaskState, to: TaskState): boolean {
  return ALLOWED[from].includes(to);
}

/** Thrown when code asks for a move the table does not allow; a bug, never a user error. */
export class IllegalTransitionError extends Error {
  override readonly name = 'IllegalTransitionError';
  constructor(
    readonly taskId: string,
    readonly from: TaskState,
    readonly to: TaskState,
    detail?: string,
  ) {
    super(`task ${taskId}: illegal transition ${from} → ${to}${detail ? ` (${detail})` : ''}`);
  }
}

/**
 * @param edge the named edge the caller takes; required for, and only for, a guarded edge
 * @throws IllegalTransitionError when the table has no such move, or its guard refuses the task
 */
export function assertTransition(task: { id: string; state: TaskState; failedBy: FailedBy | null }, to: TaskState, edge?: TransitionEdge): void {
  if (edge === undefined) {
    if (!canTransition(task.state, to)) throw new IllegalTransitionError(task.id, task.state, to);
    return;
  }
  const e = GUARDED[task.state]?.find((g) => g.to === to && g.edge === edge);
  if (!e) throw new IllegalTransitionError(task.id, task.state, to, `no ${edge} edge`);
  if (!e.guard(task)) throw new IllegalTransitionError(task.id, task.state, to, `${edge}: ${e.why}`);
}
