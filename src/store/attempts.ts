import type { Db, Writer } from './db.js';
import { stmt } from './statements.js';

/** Outcome of one webhook POST : `accepted` 2xx, `retry` network/timeout/408/429/5xx, `failed` 3xx/4xx, `gone` 410. */
export type AttemptOutcome = 'accepted' | 'retry' | 'failed' | 'gone';

export interface AttemptRow {
  id: number;
  dispatchId: string;
  taskId: string;
  turn: number;
  /** 1-based attempt number within the dispatch. */
  attempt: number;
  startedAt: number;
  /** Null while the attempt is in flight (or was when the process died). */
  finishedAt: number | null;
  outcome: AttemptOutcome | null;
  httpStatus: number | null;
  error: string | null;
}

const SELECT = `SELECT id, dispatch_id AS dispatchId, task_id AS taskId, turn, attempt, started_at AS startedAt,
  finished_at AS finishedAt, outcome, http_status AS httpStatus, error FROM dispatch_attempts`;

export function attemptReads(db: Db) {
  return {
    of(dispatchId: string): AttemptRow[] {
      return stmt(db, `${SELECT} WHERE dispatch_id = ? ORDER BY attempt`).all(dispatchId) as AttemptRow[];
    },

    /** The newest attempt of a dispatch, if any. */
    last(dispatchId: string): AttemptRow | undefined {
      return stmt(db, `${SELECT} WHERE dispatch_id = ? ORDER BY attempt DESC LIMIT 1`).get(dispatchId) as AttemptRow | undefined;
    },

    ofTask(taskId: string): AttemptRow[] {
      return stmt(db, `${SELECT} WHERE task_id = ? ORDER BY id`).all(taskId) as AttemptRow[];
    },
  };
}

export function attemptWrites(w: Writer) {
  return {
    /** Records the start of an attempt (before the network call) and returns its row. */
    start(a: { dispatchId: string; taskId: string; turn: number; at: number }): AttemptRow {
      const n = (stmt(w.db, `SELECT max(attempt) AS n FROM dispatch_attempts WHERE dispatch_id = ?`).get(a.dispatchId) as { n: number | null }).n ?? 0;
      const info = stmt(w.db, `INSERT INTO dispatch_attempts (dispatch_id, task_id, turn, attempt, started_at) VALUES (?, ?, ?, ?, ?)`).run(a.dispatchId, a.taskId, a.turn, n + 1, a.at);
      return { id: Number(info.lastInsertRowid), dispatchId: a.dispatchId, taskId: a.taskId, turn: a.turn, attempt: n + 1, startedAt: a.at, finishedAt: null, outcome: null, httpStatus: null, error: null };
    },

    finish(id: number, r: { at: number; outcome: AttemptOutcome; httpStatus: number | null; error: string | null }): void {
      stmt(w.db, `UPDATE dispatch_attempts SET finished_at = ?, outcome = ?, http_status = ?, error = ? WHERE id = ?`).run(r.at, r.outcome, r.httpStatus, r.error, id);
    },
  };
}
