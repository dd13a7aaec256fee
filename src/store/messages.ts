import type { Db, Writer } from './db.js';
import { stmt } from './statements.js';

/**
 * A message in a task's history: the caller's asks (`user`) and the agent's replies (`agent`). An
 * agent reply's content is its reply row (src/store/replies.ts, by `ledgerId`); rows written before
 * those existed hold the labelled text in `text`.
 */
export interface MessageRow {
  seq: number;
  agent: string;
  messageId: string;
  taskId: string;
  contextId: string;
  role: 'user' | 'agent';
  /**
   * `ask` (new work or an answer to INPUT_REQUIRED), `poll` (a follow-up that only asked for the
   * state; kept for messageId dedupe, left out of the history), `reply` (an agent reply).
   */
  kind: 'ask' | 'poll' | 'reply';
  /** The turn the message belongs to. */
  turn: number;
  /** The caller's text; '' for an agent reply with a `ledgerId`; a poll's first characters only (`textBytes`). */
  text: string;
  /** A poll's text size in UTF-8 bytes when `text` holds only its start (src/core/submit.ts); null or absent when `text` is whole. */
  textBytes?: number | null;
  /** The ledger row of an agent reply (its reply row); null for the caller's messages and older rows. */
  ledgerId?: number | null;
  /** SHA-256 (hex) of the caller's parts, to tell a replay from a reused `messageId`. */
  contentSha256: string;
  createdAt: number;
}

const SELECT = `SELECT seq, agent, message_id AS messageId, task_id AS taskId, context_id AS contextId, role, kind, turn, text,
  ledger_id AS ledgerId, text_bytes AS textBytes, content_sha256 AS contentSha256, created_at AS createdAt FROM messages`;

/** What a task's view shows of a message (src/core/task-view.ts). */
export type MessageViewRow = Pick<MessageRow, 'messageId' | 'contextId' | 'taskId' | 'role' | 'text' | 'ledgerId' | 'createdAt'>;

const VIEW = `SELECT message_id AS messageId, context_id AS contextId, task_id AS taskId, role, text, ledger_id AS ledgerId, created_at AS createdAt FROM messages`;

/**
 * Migration 16: a poll's text is kept to its first characters, with its size (`text_bytes`) and
 * the digest it always had (`content_sha256`); a task counts the polls it answered without
 * storing them (`polls_unstored`), past its cap of message rows (src/core/submit.ts).
 */
export const POLL_BOUNDS_MIGRATION = `
  ALTER TABLE messages ADD COLUMN text_bytes INTEGER;
  ALTER TABLE tasks ADD COLUMN polls_unstored INTEGER NOT NULL DEFAULT 0;
`;

export function messageReads(db: Db) {
  return {
    /** The message rows a task holds (asks, polls, replies), from its task row (migration 14's count); 0 for no such task. */
    countOfTask(taskId: string): number {
      return (stmt(db, `SELECT n_messages AS n FROM tasks WHERE id = ?`).get(taskId) as { n: number } | undefined)?.n ?? 0;
    },

    /** The polls a task answered without storing them (past its cap of message rows). */
    unstoredPolls(taskId: string): number {
      return (stmt(db, `SELECT polls_unstored AS n FROM tasks WHERE id = ?`).get(taskId) as { n: number } | undefined)?.n ?? 0;
    },

    /** The message stored under a caller's `messageId`, scoped per agent. Durable, so dedupe survives restarts. */
    byId(agent: string, messageId: string): MessageRow | undefined {
      return stmt(db, `${SELECT} WHERE agent = ? AND message_id = ?`).get(agent, messageId) as MessageRow | undefined;
    },

    /** The task's history (asks and replies, no polls), oldest first; with `last`, only the newest `last` messages. */
    history(taskId: string, last?: number): MessageRow[] {
      if (last === undefined) return stmt(db, `${SELECT} WHERE task_id = ? AND kind != 'poll' ORDER BY seq`).all(taskId) as MessageRow[];
      // `last` is a validated integer (0–1000); written into the SQL, see dueDispatches.
      const n = Math.max(0, Math.floor(last));
      const rows = stmt(db, `${SELECT} WHERE task_id = ? AND kind != 'poll' ORDER BY seq DESC LIMIT ${n}`).all(taskId) as MessageRow[];
      return rows.reverse();
    },

    /** {@link history} with only the columns a task's view shows. */
    historyView(taskId: string, last?: number): MessageViewRow[] {
      if (last === undefined) return stmt(db, `${VIEW} WHERE task_id = ? AND kind != 'poll' ORDER BY seq`).all(taskId) as MessageViewRow[];
      const n = Math.max(0, Math.floor(last));
      return (stmt(db, `${VIEW} WHERE task_id = ? AND kind != 'poll' ORDER BY seq DESC LIMIT ${n}`).all(taskId) as MessageViewRow[]).reverse();
    },
  };
}

export function messageWrites(w: Writer) {
  return {
    insert(m: Omit<MessageRow, 'seq'>): void {
      stmt(w.db,
        `INSERT INTO messages (agent, message_id, task_id, context_id, role, kind, turn, text, ledger_id, text_bytes, content_sha256, created_at)
         VALUES (@agent, @messageId, @taskId, @contextId, @role, @kind, @turn, @text, @ledgerId, @textBytes, @contentSha256, @createdAt)`,
      ).run({ ...m, ledgerId: m.ledgerId ?? null, textBytes: m.textBytes ?? null });
    },

    /** Counts a poll answered on `taskId` without a row of its own. */
    countUnstoredPoll(taskId: string): void {
      stmt(w.db, `UPDATE tasks SET polls_unstored = polls_unstored + 1 WHERE id = ?`).run(taskId);
    },
  };
}
