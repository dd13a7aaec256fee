import type { Db, Writer } from './db.js';
import { packText } from './compact.js';
import { replyTextSql } from './large-values.js';
import { stmt } from './statements.js';
import type { ReplyStatus } from './turns.js';

/**
 * One authenticated reply the bridge promoted (applied, or kept after a deadline or dispatch
 * failure), keyed by its ledger row: the agent's text as parsed, unfenced and uncleaned (the views
 * clean and fence it: src/core/untrusted-text.ts), and the fence nonce it is always shown with.
 * Its attachments are {@link AttachmentRow}s, stored once and referred to by every view.
 */
export interface ReplyRow {
  ledgerId: number;
  taskId: string;
  turn: number;
  agent: string;
  /** The reply's status word, or `late` for a reply kept after the task failed. */
  kind: ReplyStatus | 'late';
  /** 16 lowercase hex digits from the CSPRNG, drawn when the reply was applied (docs/agent-text.md). */
  nonce: string;
  /** The answer after the `---` line, as the reply format parsed it. */
  text: string;
  /**
   * Written: the answer was written before as a large value (src/store/large-values.ts) and `text`
   * is ''. Reads give the whole answer in `text` and leave this out.
   */
  textValue?: number | null;
  /** Non-blank lines after the answer left out as quoted text or a signature. */
  omittedLines: number;
  createdAt: number;
}

/**
 * One attachment of a reply (docs/agent-text.md, "Files and data"). `filename` and `mediaType` are
 * as the agent wrote them; the views clean them.
 */
export interface AttachmentRow {
  ledgerId: number;
  /** 1-based position among the reply's attachments. */
  seq: number;
  taskId: string;
  /** `file`: `bytes` hold it; `data`: `data` holds its JSON text; `refused`: neither, `reason` says why. */
  kind: 'file' | 'data' | 'refused';
  filename: string | null;
  mediaType: string;
  /** Decoded size in bytes. */
  size: number;
  bytes: Buffer | null;
  data: string | null;
  /** Why it was refused, or why a JSON attachment stayed a file; null otherwise. */
  reason: string | null;
}

/** An attachment without its content (what a view needs to say where it is); {@link replyReads} `content` reads the rest. */
export type AttachmentInfo = Omit<AttachmentRow, 'bytes' | 'data'>;

const REPLY_COLUMNS = `ledger_id AS ledgerId, task_id AS taskId, turn, agent, kind, nonce, ${replyTextSql('replies')} AS text, omitted_lines AS omittedLines, created_at AS createdAt`;
const ATTACHMENT_COLUMNS = `ledger_id AS ledgerId, seq, task_id AS taskId, kind, filename, media_type AS mediaType, size, reason`;

export function replyReads(db: Db) {
  return {
    /** The reply recorded under this ledger row, if any. */
    get(ledgerId: number): ReplyRow | undefined {
      return stmt(db, `SELECT ${REPLY_COLUMNS} FROM replies WHERE ledger_id = ?`).get(ledgerId) as ReplyRow | undefined;
    },

    /** A task's replies, oldest first. */
    ofTask(taskId: string): ReplyRow[] {
      return stmt(db, `SELECT ${REPLY_COLUMNS} FROM replies WHERE task_id = ? ORDER BY ledger_id`).all(taskId) as ReplyRow[];
    },

    /**
     * The replies a task's view without history shows, oldest first: those its artifacts hold
     * (`done`, `failed`, `late`) and the reply of ledger row `ledgerId` (the current turn's, which
     * its status message shows); not the progress notes and questions of earlier turns, whose text
     * only the history shows (src/core/task-view.ts).
     */
    shownOfTask(taskId: string, ledgerId: number | null): ReplyRow[] {
      return stmt(db, `SELECT ${REPLY_COLUMNS} FROM replies WHERE task_id = ? AND (kind IN ('done', 'failed', 'late') OR ledger_id IS ?) ORDER BY ledger_id`).all(taskId, ledgerId) as ReplyRow[];
    },

    /** A task's attachments, by reply and position, without their content (a list of tasks reads no blob). */
    attachmentsOf(taskId: string): AttachmentInfo[] {
      return stmt(db, `SELECT ${ATTACHMENT_COLUMNS} FROM reply_attachments WHERE task_id = ? ORDER BY ledger_id, seq`).all(taskId) as AttachmentInfo[];
    },

    /** The content of one attachment: a file's bytes, a data part's JSON text (null for the other kinds, or no such row). */
    content(ledgerId: number, seq: number): { bytes: Buffer | null; data: string | null } {
      return (stmt(db, `SELECT bytes, data FROM reply_attachments WHERE ledger_id = ? AND seq = ?`).get(ledgerId, seq) as { bytes: Buffer | null; data: string | null } | undefined) ?? { bytes: null, data: null };
    },
  };
}

/** The text columns of a reply row: the text packed (src/store/compact.ts) and '' in `text`, or as it is. */
function packedText(text: string): { text: string; textDeflate: Buffer | null } {
  const packed = packText(text);
  return packed ? { text: '', textDeflate: packed } : { text, textDeflate: null };
}

export function replyWrites(w: Writer) {
  return {
    insert(r: ReplyRow): void {
      stmt(w.db,
        `INSERT INTO replies (ledger_id, task_id, turn, agent, kind, nonce, text, text_deflate, text_value, omitted_lines, created_at)
         VALUES (@ledgerId, @taskId, @turn, @agent, @kind, @nonce, @text, @textDeflate, @textValue, @omittedLines, @createdAt)`,
      ).run({ ...r, ...packedText(r.text), textValue: r.textValue ?? null });
    },

    insertAttachment(a: AttachmentRow): void {
      stmt(w.db,
        `INSERT INTO reply_attachments (ledger_id, seq, task_id, kind, filename, media_type, size, bytes, data, reason)
         VALUES (@ledgerId, @seq, @taskId, @kind, @filename, @mediaType, @size, @bytes, @data, @reason)`,
      ).run(a);
    },
  };
}
