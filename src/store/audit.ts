import type { Db } from './db.js';
import { stmt } from './statements.js';
import type { TaskRow } from './task-rows.js';
import type { TaskState } from './task-state.js';

/** One audit entry as stored: which terminal state it records, when it was written (ms), and the entry. */
export interface AuditRow {
  seq: number;
  state: TaskState;
  writtenAt: number;
  entry: Record<string, unknown>;
}

/**
 * The audit entry: written once per arrival of a task at a terminal state (a retried task can
 * arrive twice), by the task writes inside their transaction. It names who asked, the agent, the
 * turns, every ledger verdict for the task and the cause.
 */
export function writeAudit(db: Db, task: TaskRow, at: number): void {
  const turns = stmt(db, `SELECT turn, dispatch_id AS dispatchId, dispatch_state AS dispatchState, reply_status AS replyStatus FROM turns WHERE task_id = ? ORDER BY turn`).all(task.id);
  const verdicts = stmt(db, `SELECT id, message_id AS messageId, verdict, seen_at AS seenAt FROM ledger WHERE task_id = ? ORDER BY id`).all(task.id);
  const entry = {
    task: task.id,
    agent: task.agent,
    contextId: task.contextId,
    caller: task.caller,
    state: task.state,
    cause: task.stateReason,
    failedBy: task.failedBy,
    createdAt: new Date(task.createdAt).toISOString(),
    endedAt: new Date(at).toISOString(),
    turns,
    verdicts,
  };
  stmt(db,
    `INSERT INTO audit (task_id, seq, state, written_at, entry)
     VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM audit WHERE task_id = ?), ?, ?, ?)`,
  ).run(task.id, task.id, task.state, at, JSON.stringify(entry));
}

export function auditReads(db: Db) {
  return {
    /** The newest audit entry of a task (there is one per arrival at a terminal state). */
    latest(taskId: string): Record<string, unknown> | undefined {
      const r = stmt(db, `SELECT entry FROM audit WHERE task_id = ? ORDER BY seq DESC LIMIT 1`).get(taskId) as { entry: string } | undefined;
      return r && (JSON.parse(r.entry) as Record<string, unknown>);
    },

    /** Every audit entry of a task, oldest first; empty when none. */
    of(taskId: string): AuditRow[] {
      const rows = stmt(db, `SELECT seq, state, written_at AS writtenAt, entry FROM audit WHERE task_id = ? ORDER BY seq`).all(taskId) as (Omit<AuditRow, 'entry'> & { entry: string })[];
      return rows.map((r) => ({ ...r, entry: JSON.parse(r.entry) as Record<string, unknown> }));
    },
  };
}
