import { packText, unpackText } from './compact.js';
import type { Db } from './db.js';
import { ledgerReads } from './ledger.js';
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
 * The ledger verdicts an audit entry lists at most: the newest, and the first the judge accepted,
 * as `show` lists them (store/ledger.ts `shownOfTask`; each turn's reply too); the others are
 * counted per verdict. Anyone who can mail the mailbox can tag mail with a task id, so every
 * verdict of the task made the entry, and the transaction that ends the task, grow with a flood
 * of forged mail (attack review 8: 2,000 forgeries with 15 KB Message-IDs, a 30 MB entry and a
 * CancelTask of 745 ms).
 */
export const AUDIT_VERDICTS = { newest: 200, accepted: 200 } as const;

/** Characters of a Message-ID an audit entry keeps (the sender's text; the ledger row it names by id holds it whole). */
export const AUDIT_MESSAGE_ID_CHARS = 256;

/**
 * The audit entry: written once per arrival of a task at a terminal state (a retried task can
 * arrive twice), by the task writes inside their transaction. It names who asked, the agent, the
 * turns, the ledger verdicts for the task (at most {@link AUDIT_VERDICTS}; when some are left out,
 * `verdictsLeftOut` and `verdictCounts`, every verdict counted) and the cause.
 */
export function writeAudit(db: Db, task: TaskRow, at: number): void {
  const turns = stmt(db, `SELECT turn, dispatch_id AS dispatchId, dispatch_state AS dispatchState, reply_status AS replyStatus FROM turns WHERE task_id = ? ORDER BY turn`).all(task.id);
  const shown = ledgerReads(db).shownOfTask(task.id, AUDIT_VERDICTS.newest, AUDIT_VERDICTS.accepted);
  const verdicts = shown.rows.map((r) => ({ id: r.id, messageId: r.messageId === null || r.messageId.length <= AUDIT_MESSAGE_ID_CHARS ? r.messageId : `${r.messageId.slice(0, AUDIT_MESSAGE_ID_CHARS)}…`, verdict: r.verdict, seenAt: r.seenAt }));
  const total = shown.counts.reduce((n, c) => n + c.count, 0);
  const leftOut = total > verdicts.length ? { verdictsLeftOut: total - verdicts.length, verdictCounts: Object.fromEntries(shown.counts.map((c) => [c.verdict, c.count])) } : {};
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
    ...leftOut,
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
