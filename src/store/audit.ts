import { packText, unpackText } from './compact.js';
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
  // Packed when that makes it smaller (src/store/compact.ts): `entry` is then ''.
  const json = JSON.stringify(entry);
  const packed = packText(json);
  stmt(db,
    `INSERT INTO audit (task_id, seq, state, written_at, entry, entry_deflate)
     VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM audit WHERE task_id = ?), ?, ?, ?, ?)`,
  ).run(task.id, task.id, task.state, at, packed ? '' : json, packed);
}

/** An audit entry as stored: its JSON text, or '' and the text packed. */
interface StoredEntry {
  entry: string;
  packed: Buffer | null;
}

function parseEntry(r: StoredEntry): Record<string, unknown> {
  return JSON.parse(r.packed ? unpackText(r.packed) : r.entry) as Record<string, unknown>;
}

export function auditReads(db: Db) {
  return {
    /** The newest audit entry of a task (there is one per arrival at a terminal state). */
    latest(taskId: string): Record<string, unknown> | undefined {
      const r = stmt(db, `SELECT entry, entry_deflate AS packed FROM audit WHERE task_id = ? ORDER BY seq DESC LIMIT 1`).get(taskId) as StoredEntry | undefined;
      return r && parseEntry(r);
    },

    /** Every audit entry of a task, oldest first; empty when none. */
    of(taskId: string): AuditRow[] {
      const rows = stmt(db, `SELECT seq, state, written_at AS writtenAt, entry, entry_deflate AS packed FROM audit WHERE task_id = ? ORDER BY seq`).all(taskId) as (Omit<AuditRow, 'entry'> & StoredEntry)[];
      return rows.map(({ packed, ...r }) => ({ ...r, entry: parseEntry({ entry: r.entry, packed }) }));
    },
  };
}
