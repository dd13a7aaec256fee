/**
 * Read-only queries for `a2a-mailbridge status`: what needs the operator's eye across
 * all tasks — webhooks that keep failing, replies the gates refused for open tasks, dispatch
 * failures of late. Each is bounded by a limit; none writes.
 */
import type { Verdict } from '../uplink/verdicts.js';
import type { AttemptOutcome } from './attempts.js';
import type { Db } from './db.js';
import { stmt } from './statements.js';
import type { TaskState } from './task-state.js';

/** A dispatch still pending whose last attempt was not accepted (or is under way). */
export interface FailingDispatch {
  taskId: string;
  agent: string;
  turn: number;
  /** The last attempt's number. */
  attempt: number;
  /** Null while it is under way. */
  outcome: AttemptOutcome | null;
  httpStatus: number | null;
  error: string | null;
  nextAttemptAt: number | null;
}

export function overviewReads(db: Db) {
  return {
    /** Pending dispatches with at least one attempt that was not accepted, soonest next attempt first, at most `limit`. */
    failingDispatches(limit: number): FailingDispatch[] {
      return stmt(
        db,
        `SELECT t.task_id AS taskId, k.agent AS agent, t.turn AS turn, a.attempt AS attempt, a.outcome AS outcome,
           a.http_status AS httpStatus, a.error AS error, t.next_attempt_at AS nextAttemptAt
         FROM turns t
         JOIN tasks k ON k.id = t.task_id
         JOIN dispatch_attempts a ON a.id = (SELECT id FROM dispatch_attempts WHERE dispatch_id = t.dispatch_id ORDER BY attempt DESC LIMIT 1)
         WHERE t.dispatch_state = 'pending' AND (a.outcome IS NULL OR a.outcome != 'accepted')
         ORDER BY t.next_attempt_at LIMIT ?`,
      ).all(limit) as FailingDispatch[];
    },

    /** Tasks that FAILED by dispatch (their webhook never accepted the job) with a status change at or after `since` (ms). */
    dispatchFailuresSince(since: number): number {
      return (stmt(db, `SELECT count(*) AS n FROM tasks WHERE state = 'FAILED' AND failed_by = 'dispatch' AND updated_at >= ?`).get(since) as { n: number }).n;
    },

    /**
     * Open tasks (SUBMITTED, WORKING, INPUT_REQUIRED) with refused replies in their current turn —
     * every verdict but `applied:*`, `late:recorded` and `duplicate` — newest refusal first, at most `limit`.
     */
    refusedForOpenTasks(limit: number): RefusedForOpenTask[] {
      return refusedForOpenTasks(db, limit);
    },
  };
}

/** An open task with mail tagged for it that the gates refused during its current turn. */
export interface RefusedForOpenTask {
  taskId: string;
  agent: string;
  state: TaskState;
  count: number;
  lastVerdict: Verdict;
  lastSeenAt: number;
}

function refusedForOpenTasks(db: Db, limit: number): RefusedForOpenTask[] {
  return stmt(
    db,
    `SELECT g.taskId, g.agent, g.state, g.count, last.verdict AS lastVerdict, last.seen_at AS lastSeenAt
     FROM (
       SELECT k.id AS taskId, k.agent AS agent, k.state AS state, count(*) AS count, max(l.id) AS lastId
       FROM tasks k
       JOIN turns t ON t.task_id = k.id AND t.turn = k.turn
       JOIN ledger l ON l.task_id = k.id AND l.seen_at >= t.created_at
         AND l.verdict NOT LIKE 'applied:%' AND l.verdict NOT IN ('late:recorded', 'duplicate')
       WHERE k.state IN ('SUBMITTED', 'WORKING', 'INPUT_REQUIRED')
       GROUP BY k.id
     ) g
     JOIN ledger last ON last.id = g.lastId
     ORDER BY g.lastId DESC LIMIT ?`,
  ).all(limit) as RefusedForOpenTask[];
}
