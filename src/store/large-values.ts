/**
 * Large values — the raw bytes of a large applied reply, a long answer — written in bounded steps
 * before the decision that refers to them (docs/architecture.md, "The store"). Written in one
 * statement inside the recording transaction, a 10 MB reply held the event loop for 117–151 ms on
 * a quiet machine, more under load (the raw message and the answer, then the commit and its
 * checkpoint: bench/RESULTS.md, reply-parse). Instead each value is written as chunks of at most {@link LARGE_VALUE_CHUNK} bytes
 * (or UTF-16 code units for text), each chunk in its own short transaction with a turn of the
 * event loop between them; the decision's one transaction then records its rows with a reference
 * to the value (`ledger.raw_value`, `replies.text_value`), and reads put the chunks back together.
 *
 * A value no row refers to is an orphan: the decision refused the mail after all (the writer drops
 * it at once), or the process stopped between the writing and the decision. Orphans are deleted
 * at start (src/core/recover.ts) and counted in the log. Deleting a ledger or reply row deletes its
 * value (triggers of the migration).
 */
import type { Db, Writer } from './db.js';
import { stmt } from './statements.js';

/** A raw message of at least this many bytes, or an answer of at least this many UTF-16 code units, is stored as a large value. */
export const LARGE_VALUE_MIN = 512 * 1024;
/** Bytes (or UTF-16 code units of text) per chunk: one chunk is one short transaction. */
export const LARGE_VALUE_CHUNK = 256 * 1024;

/** The migration of this module (appended to MIGRATIONS; self-contained). */
export const LARGE_VALUES_MIGRATION = `
  CREATE TABLE large_values (
    id         INTEGER PRIMARY KEY,
    kind       TEXT NOT NULL CHECK (kind IN ('bytes','text')),
    size       INTEGER NOT NULL,
    created_at INTEGER NOT NULL
  ) STRICT;
  CREATE TABLE large_value_chunks (
    value_id INTEGER NOT NULL,
    seq      INTEGER NOT NULL,
    data     ANY NOT NULL,
    PRIMARY KEY (value_id, seq)
  ) STRICT;
  ALTER TABLE ledger ADD COLUMN raw_value INTEGER;
  ALTER TABLE replies ADD COLUMN text_value INTEGER;
  CREATE INDEX ledger_by_raw_value ON ledger(raw_value) WHERE raw_value IS NOT NULL;
  CREATE INDEX replies_by_text_value ON replies(text_value) WHERE text_value IS NOT NULL;
  CREATE TRIGGER ledger_drops_raw_value AFTER DELETE ON ledger WHEN OLD.raw_value IS NOT NULL BEGIN
    DELETE FROM large_value_chunks WHERE value_id = OLD.raw_value;
    DELETE FROM large_values WHERE id = OLD.raw_value;
  END;
  CREATE TRIGGER replies_drop_text_value AFTER DELETE ON replies WHEN OLD.text_value IS NOT NULL BEGIN
    DELETE FROM large_value_chunks WHERE value_id = OLD.text_value;
    DELETE FROM large_values WHERE id = OLD.text_value;
  END;
`;

/**
 * SQL for the text of the reply row `alias` (a row of `replies`): its packed text inflated
 * (src/store/compact.ts), its `text`, or the chunks of its large value joined in order.
 */
export function replyTextSql(alias: string): string {
  return `CASE WHEN ${alias}.text_deflate IS NOT NULL THEN mailbridge_unpack(${alias}.text_deflate) WHEN ${alias}.text_value IS NULL THEN ${alias}.text
    ELSE (SELECT group_concat(c.data, '' ORDER BY c.seq) FROM large_value_chunks c WHERE c.value_id = ${alias}.text_value) END`;
}

const ORPHAN = `NOT EXISTS (SELECT 1 FROM ledger WHERE raw_value = large_values.id)
  AND NOT EXISTS (SELECT 1 FROM replies WHERE text_value = large_values.id)`;

export function largeValueReads(db: Db) {
  return {
    /** The bytes of a `bytes` value, its chunks in order; null when there is no such value. */
    bytes(id: number): Buffer | null {
      const chunks = stmt(db, `SELECT data FROM large_value_chunks WHERE value_id = ? ORDER BY seq`).all(id) as { data: Buffer }[];
      return chunks.length ? Buffer.concat(chunks.map((c) => c.data)) : null;
    },

    /** Values no ledger or reply row refers to, created before `before` (ms): how many, and their bytes (or code units). */
    orphans(before: number): { count: number; size: number } {
      const r = stmt(db, `SELECT count(*) AS count, coalesce(sum(size), 0) AS size FROM large_values WHERE created_at < ? AND ${ORPHAN}`).get(before) as { count: number; size: number };
      return r;
    },
  };
}

export function largeValueWrites(w: Writer) {
  return {
    /** A new, empty value; its chunks follow. @returns its id */
    create(kind: 'bytes' | 'text', size: number, at: number): number {
      return Number(stmt(w.db, `INSERT INTO large_values (kind, size, created_at) VALUES (?, ?, ?)`).run(kind, size, at).lastInsertRowid);
    },

    append(id: number, seq: number, data: Buffer | string): void {
      stmt(w.db, `INSERT INTO large_value_chunks (value_id, seq, data) VALUES (?, ?, ?)`).run(id, seq, data);
    },

    /** Deletes chunk `seq` of a value (one step of {@link dropLargeValue}). */
    dropChunk(id: number, seq: number): void {
      stmt(w.db, `DELETE FROM large_value_chunks WHERE value_id = ? AND seq = ?`).run(id, seq);
    },

    /** Deletes a value and what is left of its chunks. */
    drop(id: number): void {
      stmt(w.db, `DELETE FROM large_value_chunks WHERE value_id = ?`).run(id);
      stmt(w.db, `DELETE FROM large_values WHERE id = ?`).run(id);
    },

    /** Deletes the values no row refers to, created before `before` (ms). @returns how many, and their size */
    dropOrphans(before: number): { count: number; size: number } {
      const found = largeValueReads(w.db).orphans(before);
      if (found.count === 0) return found;
      stmt(w.db, `DELETE FROM large_value_chunks WHERE value_id IN (SELECT id FROM large_values WHERE created_at < ? AND ${ORPHAN})`).run(before);
      stmt(w.db, `DELETE FROM large_values WHERE created_at < ? AND ${ORPHAN}`).run(before);
      return found;
    },
  };
}

/** What the step writers need of the store: its transactions (src/store/store.ts `Store.tx`). */
interface Transactions {
  tx<T>(fn: (tx: { largeValues: ReturnType<typeof largeValueWrites> }) => T): T;
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Where the chunk of text starting at `from` ends: {@link LARGE_VALUE_CHUNK} code units, never between the two halves of a surrogate pair. */
function textChunkEnd(text: string, from: number): number {
  const end = Math.min(text.length, from + LARGE_VALUE_CHUNK);
  const last = text.charCodeAt(end - 1);
  return end < text.length && last >= 0xd800 && last <= 0xdbff ? end - 1 : end;
}

/**
 * Writes `value` as a large value: one short transaction to create it and one per chunk, with a
 * turn of the event loop between them. Until a row refers to it, it is an orphan.
 * @param at the time it is written, ms (orphans are judged by it)
 * @returns the value's id
 */
export async function writeLargeValue(store: Transactions, value: Buffer | string, at: number): Promise<number> {
  const kind = typeof value === 'string' ? 'text' : 'bytes';
  const id = store.tx((tx) => tx.largeValues.create(kind, value.length, at));
  let seq = 0;
  for (let from = 0; from < value.length; seq++) {
    await turn();
    const end = typeof value === 'string' ? textChunkEnd(value, from) : Math.min(value.length, from + LARGE_VALUE_CHUNK);
    const chunk = value.slice(from, end);
    store.tx((tx) => tx.largeValues.append(id, seq, chunk));
    from = end;
  }
  return id;
}

/** Deletes a value no row refers to, a chunk per short transaction, with a turn of the event loop between them. */
export async function dropLargeValue(store: Transactions, id: number, size: number): Promise<void> {
  const chunks = Math.ceil(size / (LARGE_VALUE_CHUNK - 1));
  for (let seq = 0; seq < chunks; seq++) {
    store.tx((tx) => tx.largeValues.dropChunk(id, seq));
    await turn();
  }
  store.tx((tx) => tx.largeValues.drop(id));
}
