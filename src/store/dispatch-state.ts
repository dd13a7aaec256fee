/**
 * The dispatch state machine of a turn's webhook (docs/architecture.md, "The dispatch state
 * machine"). Every change of `turns.dispatch_state` goes through {@link assertDispatchMove}; the
 * store's schema holds the states (migration 6: CHECK constraints).
 *
 * - `pending`: to be sent at `next_attempt_at` (rescheduled in place: a lease before an attempt,
 *   a backoff after a retryable answer, "due now" after a crash);
 * - `accepted`: a 2xx came back, or a reply arrived (the agent evidently has the turn);
 * - `failed`: attempts exhausted, a 3xx/4xx/410, the agent left the config, the task moved on;
 * - `canceled`: the task was canceled before the webhook was accepted.
 */
export type DispatchState = 'pending' | 'accepted' | 'failed' | 'canceled';

export const DISPATCH_STATES: readonly DispatchState[] = ['pending', 'accepted', 'failed', 'canceled'];

const ALLOWED: Record<DispatchState, readonly DispatchState[]> = {
  pending: ['pending', 'accepted', 'failed', 'canceled'],
  accepted: [],
  failed: [],
  canceled: [],
};

/**
 * The one named edge: the operator's retry gives a failed turn a new dispatch (a new
 * webhook-id, envelope and token), pending again; the task's `operator-retry` edge guards it.
 */
export type DispatchEdge = 'redispatch';
const NAMED: Record<DispatchEdge, { from: DispatchState; to: DispatchState }> = { redispatch: { from: 'failed', to: 'pending' } };

/** Thrown when code asks for a dispatch move the table does not allow; a bug, never a user error. */
export class IllegalDispatchMoveError extends Error {
  override readonly name = 'IllegalDispatchMoveError';
  constructor(
    readonly dispatchId: string,
    readonly from: DispatchState,
    readonly to: DispatchState,
  ) {
    super(`dispatch ${dispatchId}: illegal move ${from} → ${to}`);
  }
}

export function canMoveDispatch(from: DispatchState, to: DispatchState): boolean {
  return ALLOWED[from].includes(to);
}

/**
 * @param edge the named edge the caller takes; required for, and only for, that edge
 * @throws IllegalDispatchMoveError when the table has no such move
 */
export function assertDispatchMove(dispatchId: string, from: DispatchState, to: DispatchState, edge?: DispatchEdge): void {
  const ok = edge === undefined ? canMoveDispatch(from, to) : NAMED[edge].from === from && NAMED[edge].to === to;
  if (!ok) throw new IllegalDispatchMoveError(dispatchId, from, to);
}
