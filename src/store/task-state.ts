/**
 * The task state machine (BRIEF §6). Every state change in the product goes through
 * {@link assertTransition}; the allowed moves are this one table.
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

/** Terminal states are sticky: nothing moves a task out of them (late replies are recorded, not applied). */
export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set(['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED']);

/** States in which the agent owes a reply: the deadline sweep and the reply gates treat these as open. */
export const AWAITING_AGENT: ReadonlySet<TaskState> = new Set(['SUBMITTED', 'WORKING']);

const ALLOWED: Record<TaskState, readonly TaskState[]> = {
  // SUBMITTED: stored, the webhook has not accepted the turn yet.
  SUBMITTED: ['WORKING', 'INPUT_REQUIRED', 'COMPLETED', 'FAILED', 'CANCELED', 'REJECTED'],
  // WORKING: the agent has the turn; it may also answer `working` (a progress note, no move).
  WORKING: ['INPUT_REQUIRED', 'COMPLETED', 'FAILED', 'CANCELED'],
  // INPUT_REQUIRED: the caller's answer opens the next turn, stored before its dispatch.
  INPUT_REQUIRED: ['SUBMITTED', 'CANCELED', 'FAILED'],
  COMPLETED: [],
  FAILED: [],
  CANCELED: [],
  REJECTED: [],
};

/** Why a task failed; a deadline failure keeps the token live so a late reply is kept (BRIEF §1, failure 2). */
export type FailedBy = 'deadline' | 'dispatch' | 'agent';

export function isTerminal(state: TaskState): boolean {
  return TERMINAL_STATES.has(state);
}

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
  ) {
    super(`task ${taskId}: illegal transition ${from} → ${to}`);
  }
}

export function assertTransition(taskId: string, from: TaskState, to: TaskState): void {
  if (!canTransition(from, to)) throw new IllegalTransitionError(taskId, from, to);
}
