import type { Db } from './db.js';
import { stmt } from './statements.js';
import type { DispatchState } from './dispatch-state.js';
import type { TaskState } from './task-state.js';

/**
 * Counts for `/health`, `/metrics`, `status` and `doctor`. The per-state and per-verdict counts are
 * kept by triggers (migration 11), so reading them costs the same at any store size; `rowCounts`
 * counts whole tables (tests and `doctor`).
 */
export function statsReads(db: Db) {
  return {
    /** Tasks per state; states with no task are absent. */
    tasksByState(): Partial<Record<TaskState, number>> {
      const out: Partial<Record<TaskState, number>> = {};
      for (const r of stmt(db, `SELECT state, sum(n) AS n FROM task_counts GROUP BY state HAVING sum(n) > 0`).all() as { state: TaskState; n: number }[]) out[r.state] = r.n;
      return out;
    },

    /** The agents some task in the store names, sorted (from the trigger-kept counts: the same cost at any store size). */
    agentsWithTasks(): string[] {
      return (stmt(db, `SELECT agent FROM task_counts GROUP BY agent HAVING sum(n) > 0 ORDER BY agent`).all() as { agent: string }[]).map((r) => r.agent);
    },

    /** Ledger rows per verdict; verdicts never recorded are absent. */
    ledgerByVerdict(): Record<string, number> {
      const rows = stmt(db, `SELECT verdict, n FROM verdict_counts WHERE n > 0`).all() as { verdict: string; n: number }[];
      return Object.fromEntries(rows.map((r) => [r.verdict, r.n]));
    },

    /** Turns per dispatch state; states with no turn are absent. */
    dispatchesByState(): Partial<Record<DispatchState, number>> {
      const out: Partial<Record<DispatchState, number>> = {};
      for (const r of stmt(db, `SELECT state AS s, n FROM dispatch_counts WHERE n > 0`).all() as { s: DispatchState; n: number }[]) out[r.s] = r.n;
      return out;
    },

    /** Rows per table (the tables the bridge writes), for tests and `doctor`. */
    rowCounts(): Record<'tasks' | 'turns' | 'attempts' | 'messages' | 'artifacts' | 'events' | 'ledger' | 'audit', number> {
      const n = (table: string): number => (stmt(db, `SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
      return {
        tasks: n('tasks'),
        turns: n('turns'),
        attempts: n('dispatch_attempts'),
        messages: n('messages'),
        artifacts: n('artifacts'),
        events: n('task_events'),
        ledger: n('ledger'),
        audit: n('audit'),
      };
    },
  };
}
