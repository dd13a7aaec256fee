import type { Db } from './db.js';
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
