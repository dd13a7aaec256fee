import type { Db } from './db.js';
import { stmt } from './statements.js';

/**
 * What the per-agent caps read (agents.max_open_tasks, agents.webhook.max_per_minute), inside the
 * transaction that would add a task or a turn, so two concurrent calls cannot both slip under a cap.
 */

/**
 * Open tasks of an agent (SUBMITTED, WORKING, INPUT_REQUIRED) and the earliest deadline among them
 * (ms since the epoch; null when none has one). `+agent` keeps SQLite on the state index: the open
 * tasks are few, an agent's finished ones may be 100,000.
 */
export function limitReads(db: Db) {
  return {
    openTasksOf(agent: string): { count: number; earliestDeadlineAt: number | null } {
      return openTasksOf(db, agent);
    },
    dispatchesSince(agent: string, since: number): { count: number; oldestAt: number | null } {
      return dispatchesSince(db, agent, since);
    },
  };
}

function openTasksOf(db: Db, agent: string): { count: number; earliestDeadlineAt: number | null } {
  const r = stmt(
    db,
    `SELECT count(*) AS count, min(deadline_at) AS earliestDeadlineAt FROM tasks
     WHERE state IN ('SUBMITTED', 'WORKING', 'INPUT_REQUIRED') AND +agent = ?`,
  ).get(agent) as { count: number; earliestDeadlineAt: number | null };
  return r;
}

/**
 * Turns (each one dispatch, i.e. one webhook that wakes the agent) of an agent created after
 * `since` (ms since the epoch, exclusive), and the oldest one's creation time (null when none).
 * Creating a turn moves its task's `updated_at` to at least the turn's time, so only tasks updated
 * after `since` are looked at (the `tasks_by_updated` index): the cost follows the last minute's
 * activity, not the store's size.
 */
function dispatchesSince(db: Db, agent: string, since: number): { count: number; oldestAt: number | null } {
  return stmt(
    db,
    `SELECT count(*) AS count, min(t.created_at) AS oldestAt FROM tasks k JOIN turns t ON t.task_id = k.id
     WHERE k.agent = @agent AND k.updated_at > @since AND t.created_at > @since`,
  ).get({ agent, since }) as { count: number; oldestAt: number | null };
}
