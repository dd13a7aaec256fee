import type { Db, Writer } from './db.js';
import { stmt } from './statements.js';

/**
 * When the next timed work falls due: the earliest pending webhook attempt and the earliest
 * deadline of a task awaiting the agent (ms since the epoch; null when there is none). Each is one
 * index seek (`turns_pending`, `tasks_by_state`), whatever the store's size. The bridge keeps them
 * in memory and reads them again only after the store changed (Store.generation), so a call
 * asks the store nothing when nothing can be due (src/core/bridge.ts, refresh).
 */
export interface Schedule {
  nextDispatchAt: number | null;
  nextDeadlineAt: number | null;
}

export function scheduleReads(db: Db) {
  return {
    next(): Schedule {
      const dispatch = stmt(db, `SELECT min(next_attempt_at) AS at FROM turns WHERE dispatch_state = 'pending'`).get() as { at: number | null };
      const submitted = stmt(db, `SELECT min(deadline_at) AS at FROM tasks WHERE state = 'SUBMITTED' AND deadline_at IS NOT NULL`).get() as { at: number | null };
      const working = stmt(db, `SELECT min(deadline_at) AS at FROM tasks WHERE state = 'WORKING' AND deadline_at IS NOT NULL`).get() as { at: number | null };
      const deadlines = [submitted.at, working.at].filter((x): x is number => x !== null);
      return { nextDispatchAt: dispatch.at, nextDeadlineAt: deadlines.length ? Math.min(...deadlines) : null };
    },
  };
}

export function scheduleWrites(w: Writer) {
  return {
    /**
     * Moves every pending webhook attempt (`turns.next_attempt_at`, a lease included) and pending
     * push delivery (`push_deliveries.next_attempt_at`) `byMs` earlier: the bridge clock was
     * stepped back by that much, and each keeps the delay it was given (src/core/clock-steps.ts).
     * Two index ranges (`turns_pending`, `push_deliveries_due`).
     * @returns how many rows of each moved
     */
    stepBack(byMs: number): { dispatches: number; pushes: number } {
      const dispatches = stmt(w.db, `UPDATE turns SET next_attempt_at = next_attempt_at - ? WHERE dispatch_state = 'pending' AND next_attempt_at IS NOT NULL`).run(byMs).changes;
      const pushes = stmt(w.db, `UPDATE push_deliveries SET next_attempt_at = next_attempt_at - ? WHERE state = 'pending' AND next_attempt_at IS NOT NULL`).run(byMs).changes;
      return { dispatches, pushes };
    },
  };
}
