import type { Db, Writer } from './db.js';
import { stmt } from './statements.js';
import type { TaskState } from './task-state.js';

/**
 * Push notification configurations and their deliveries (migration 10; docs/push.md). A delivery
 * is queued for every configuration of a task in the transaction of each change of the task
 * ({@link queuePushes}, called by the task writes), so no committed change goes without its POST,
 * and deliveries of one configuration are sent one at a time in the order of the changes.
 */

/** One configuration, as a caller set it (A2A v1.0 TaskPushNotificationConfig; v0.3 PushNotificationConfig). */
export interface PushConfigRow {
  taskId: string;
  id: string;
  /** The dialect it was set in: its notifications are bodies of that dialect. */
  dialect: '1.0' | '0.3';
  url: string;
  /** Sent back as `X-A2A-Notification-Token`; null when none. */
  token: string | null;
  /** `Authorization: <scheme> <credentials>` on every POST; null when none. */
  authScheme: string | null;
  authCredentials: string | null;
  createdAt: number;
}

export type PushDeliveryState = 'pending' | 'delivered' | 'failed' | 'dropped';

/** One POST owed to one configuration for one change of its task. */
export interface PushDeliveryRow {
  seq: number;
  taskId: string;
  configId: string;
  /** The state the change left the task in, and when. */
  taskState: TaskState;
  changedAt: number;
  state: PushDeliveryState;
  attempts: number;
  nextAttemptAt: number | null;
  httpStatus: number | null;
  error: string | null;
  finishedAt: number | null;
}

const CONFIG = `SELECT task_id AS taskId, id, dialect, url, token, auth_scheme AS authScheme, auth_credentials AS authCredentials, created_at AS createdAt FROM push_configs`;
const DELIVERY = `SELECT seq, task_id AS taskId, config_id AS configId, task_state AS taskState, changed_at AS changedAt, state, attempts,
  next_attempt_at AS nextAttemptAt, http_status AS httpStatus, error, finished_at AS finishedAt FROM push_deliveries`;

/**
 * Queues one delivery per configuration of `taskId` for a change to `state` stamped `changedAt`
 * (the task's status time), due at `dueAt` (the clock's now); inside the change's transaction.
 * The two differ after the clock stepped back: status times stay increasing (the last one plus
 * 1 ms), and a delivery due at such a time would wait out the step.
 */
export function queuePushes(db: Db, taskId: string, state: TaskState, changedAt: number, dueAt: number): void {
  stmt(db,
    `INSERT INTO push_deliveries (task_id, config_id, task_state, changed_at, state, next_attempt_at)
     SELECT task_id, id, ?, ?, 'pending', ? FROM push_configs WHERE task_id = ? ORDER BY created_at, id`,
  ).run(state, changedAt, dueAt, taskId);
}

export function pushReads(db: Db) {
  return {
    config(taskId: string, id: string): PushConfigRow | undefined {
      return stmt(db, `${CONFIG} WHERE task_id = ? AND id = ?`).get(taskId, id) as PushConfigRow | undefined;
    },

    /** A task's configurations, oldest first. */
    configs(taskId: string): PushConfigRow[] {
      return stmt(db, `${CONFIG} WHERE task_id = ? ORDER BY created_at, id`).all(taskId) as PushConfigRow[];
    },

    /**
     * Deliveries due at `now`, at most `limit`: for each configuration only its oldest pending
     * one (a later change is never POSTed before an earlier one).
     */
    due(now: number, limit: number): PushDeliveryRow[] {
      return stmt(db,
        `${DELIVERY} d WHERE d.state = 'pending' AND d.next_attempt_at <= ?
           AND NOT EXISTS (SELECT 1 FROM push_deliveries e WHERE e.task_id = d.task_id AND e.config_id = d.config_id AND e.state = 'pending' AND e.seq < d.seq)
         ORDER BY d.attempts, d.seq LIMIT ?`,
      ).all(now, limit) as PushDeliveryRow[];
    },

    delivery(seq: number): PushDeliveryRow | undefined {
      return stmt(db, `${DELIVERY} WHERE seq = ?`).get(seq) as PushDeliveryRow | undefined;
    },

    /** A task's deliveries, oldest first (tests, `show`). */
    deliveriesOf(taskId: string): PushDeliveryRow[] {
      return stmt(db, `${DELIVERY} WHERE task_id = ? ORDER BY seq`).all(taskId) as PushDeliveryRow[];
    },

    /** The earliest time a delivery `due()` could return is due, or null when none is pending. */
    nextDueAt(): number | null {
      return (stmt(db,
        `SELECT min(d.next_attempt_at) AS at FROM push_deliveries d WHERE d.state = 'pending'
           AND NOT EXISTS (SELECT 1 FROM push_deliveries e WHERE e.task_id = d.task_id AND e.config_id = d.config_id AND e.state = 'pending' AND e.seq < d.seq)`,
      ).get() as { at: number | null }).at;
    },

    /** Whether a task not yet terminal has a configuration, or a delivery is pending: push needs mail read in the background. */
    active(): boolean {
      const r = stmt(db,
        `SELECT EXISTS (SELECT 1 FROM push_configs c JOIN tasks t ON t.id = c.task_id WHERE t.state IN ('SUBMITTED','WORKING','INPUT_REQUIRED'))
             OR EXISTS (SELECT 1 FROM push_deliveries WHERE state = 'pending') AS active`,
      ).get() as { active: number };
      return r.active === 1;
    },
  };
}

export function pushWrites(w: Writer) {
  return {
    /** Creates a configuration, or replaces the one with the same task and id. */
    upsertConfig(c: PushConfigRow): void {
      stmt(w.db,
        `INSERT INTO push_configs (task_id, id, dialect, url, token, auth_scheme, auth_credentials, created_at)
         VALUES (@taskId, @id, @dialect, @url, @token, @authScheme, @authCredentials, @createdAt)
         ON CONFLICT (task_id, id) DO UPDATE SET dialect = excluded.dialect, url = excluded.url, token = excluded.token,
           auth_scheme = excluded.auth_scheme, auth_credentials = excluded.auth_credentials`,
      ).run(c);
    },

    /** Deletes a configuration and drops its pending deliveries (A2A v1.0 §3.1.10: none is sent after). @returns whether one existed */
    deleteConfig(taskId: string, id: string, at: number): boolean {
      stmt(w.db, `UPDATE push_deliveries SET state = 'dropped', next_attempt_at = NULL, finished_at = ? WHERE task_id = ? AND config_id = ? AND state = 'pending'`).run(at, taskId, id);
      return stmt(w.db, `DELETE FROM push_configs WHERE task_id = ? AND id = ?`).run(taskId, id).changes > 0;
    },

    /** Counts an attempt and leases the delivery until `leaseUntil` (a crash mid-POST retries after it). */
    startAttempt(seq: number, leaseUntil: number): void {
      stmt(w.db, `UPDATE push_deliveries SET attempts = attempts + 1, next_attempt_at = ? WHERE seq = ? AND state = 'pending'`).run(leaseUntil, seq);
    },

    /** Records an attempt's outcome: `pending` again at `nextAttemptAt`, or a final state. */
    finishAttempt(seq: number, r: { state: PushDeliveryState; nextAttemptAt: number | null; httpStatus: number | null; error: string | null; at: number }): void {
      stmt(w.db,
        `UPDATE push_deliveries SET state = ?, next_attempt_at = ?, http_status = ?, error = ?, finished_at = CASE WHEN ? = 'pending' THEN NULL ELSE ? END WHERE seq = ?`,
      ).run(r.state, r.nextAttemptAt, r.httpStatus, r.error, r.state, r.at, seq);
    },
  };
}
