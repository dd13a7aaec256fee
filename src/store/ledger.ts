import { UNREADABLE_REASONS } from '../uplink/mailbox.js';
import type { Verdict } from '../uplink/verdicts.js';
import { signatureDigest, zlib } from './compact.js';
import { StoreError, type Db, type Writer } from './db.js';
import { largeValueReads } from './large-values.js';
import { conditions, stmt } from './statements.js';
import { REFUSED_VERDICTS } from './turn-ledger.js';
import { THIN_DIGEST } from './prune-thin.js';

/** One fetched message and the verdict the judge gave it (src/core/judge.ts). Recorded once per source. */
export interface LedgerEntry {
  /** Where the message was read: `imap:<folder>:<uidvalidity>:<uid>` or `maildir:<folder>:<unique name>`. Unique. */
  source: string;
  seenAt: number;
  messageId: string | null;
  fromHeader: string | null;
  subject: string | null;
  dateHeader: string | null;
  /** Size of the raw message in bytes. */
  size: number;
  rawSha256: string;
  /**
   * The raw bytes kept as evidence: the whole message for an applied or late reply, the first
   * 64 KiB (or the header block read) of other tagged mail; null for untagged mail.
   */
  raw: Buffer | null;
  /**
   * The raw bytes written before as a large value (src/store/large-values.ts), instead of `raw`;
   * null or absent when `raw` holds them (or none were kept).
   */
  rawValue?: number | null;
  agent: string | null;
  taskId: string | null;
  verdict: Verdict;
  /** Which gate refused it and on what (header, value), or what was applied. */
  reason: string;
  /** When the mailbox received it (IMAP INTERNALDATE, Maildir mtime), ms since the epoch; null if unknown. */
  receivedAt?: number | null;
  /**
   * The DKIM signature that authenticated the mail (gate 7), as its b= value decoded and encoded
   * again (uplink/gates.ts `signatureKey`); null for mail refused before it authenticated. Stored
   * as its SHA-256 (src/store/compact.ts), which is all gate 1 compares.
   */
  signature?: string | null;
}

export interface LedgerRow extends LedgerEntry {
  id: number;
}

const COLUMNS = `id, source, seen_at AS seenAt, message_id AS messageId, from_header AS fromHeader, subject,
  date_header AS dateHeader, size, raw_sha256 AS rawSha256, agent, task_id AS taskId, verdict, reason, received_at AS receivedAt`;

export interface LedgerQuery {
  verdict?: string;
  taskId?: string;
  since?: number;
  until?: number;
  /** Only rows with a smaller id: the next page after a listing whose last (oldest) row had this id. */
  before?: number;
  limit: number;
}

/** Tagged mail for one task that the gates refused: how many (counted up to {@link REFUSED_COUNT_CAP}) and the newest. */
export interface RefusedReplies {
  count: number;
  /** The newest refusal's verdict (a name from the verdict table: bridge text, never the mail's). */
  lastVerdict: Verdict;
  lastSeenAt: number;
  lastLedgerId: number;
}

/** The verdicts of mail the mailbox could not read, as an SQL list. */
const MAILBOX_UNREADABLE = UNREADABLE_REASONS.map((r) => `'unreadable:${r}'`).join(', ');

/** The count of `refusedRepliesOf` stops here, so a flood of forged mail costs a bounded read. */
export const REFUSED_COUNT_CAP = 1000;

/** The rows of one task and one verdict with a row id above `?3`: a range of ledger_by_task_verdict (the rowid ends each entry). */
const REFUSED_RANGE = `FROM ledger INDEXED BY ledger_by_task_verdict WHERE task_id = ? AND verdict = ? AND id > ?`;

/** The statements of `refusedRepliesOf`, each an index step or range (test/unit/store/refused-replies.test.ts reads their plans). */
export const REFUSED_SQL = {
  /** Where a turn's mail begins in the ledger (src/store/turn-ledger.ts): one row by the primary key. */
  after: `SELECT ledger_after AS after FROM turns WHERE task_id = ? AND turn = ?`,
  /** The newest row of a task and verdict in {@link REFUSED_RANGE}. */
  newest: `SELECT id, seen_at AS seenAt ${REFUSED_RANGE} ORDER BY id DESC LIMIT 1`,
  /** Its rows, counted up to {@link REFUSED_COUNT_CAP}. */
  count: `SELECT count(*) AS n FROM (SELECT 1 ${REFUSED_RANGE} LIMIT ${REFUSED_COUNT_CAP})`,
} as const;

export function ledgerReads(db: Db) {
  return {
    isSourceRecorded(source: string): boolean {
      return stmt(db, `SELECT 1 FROM ledger WHERE source = ?`).get(source) !== undefined;
    },

    /**
     * Gate 1: the same raw bytes were recorded before (a re-upload or a rescan), with a verdict on
     * them. A row of mail the mailbox could not read (`unreadable:<reason>`, uplink/mailbox.ts
     * `UnreadableReason`) holds the digest of what was read — a header block never judged whole —
     * so a copy of that mail is judged (README, Troubleshooting: deliver a copy).
     */
    hasRawDigest(rawSha256: string): boolean {
      return stmt(db, `SELECT 1 FROM ledger WHERE raw_sha256 = ? AND verdict NOT IN (${MAILBOX_UNREADABLE}) LIMIT 1`).get(rawSha256) !== undefined;
    },

    /**
     * Gate 1: the id of a ledger row of mail authenticated by one of these DKIM signatures (keys
     * as `LedgerEntry.signature`) with this Message-ID — or with any, when `messageId` is null (a
     * header block that cannot be read: uplink/gates.ts `replayedSignatureUnreadable`); undefined
     * when none. One index read a signature (`ledger_by_signature_digest`).
     */
    authenticatedWith(signatures: readonly string[], messageId: string | null): number | undefined {
      for (const sig of signatures) {
        const r = (
          messageId === null
            ? stmt(db, `SELECT id FROM ledger WHERE dkim_b_sha256 = ? ORDER BY id LIMIT 1`).get(signatureDigest(sig))
            : stmt(db, `SELECT id FROM ledger WHERE dkim_b_sha256 = ? AND message_id = ? ORDER BY id LIMIT 1`).get(signatureDigest(sig), messageId)
        ) as { id: number } | undefined;
        if (r) return r.id;
      }
      return undefined;
    },

    /** Gate 8a: a message with this Message-ID was already promoted (or kept late) for this task. */
    isMessageIdApplied(taskId: string, messageId: string): boolean {
      return stmt(db, `SELECT 1 FROM ledger WHERE task_id = ? AND message_id = ? AND (verdict LIKE 'applied:%' OR verdict = 'late:recorded') LIMIT 1`).get(taskId, messageId) !== undefined;
    },

    /**
     * The mail recorded last (the highest ledger id): when it was seen and its verdict; null for an
     * empty ledger. One row by the primary key. For /health and `status`: a check that finds
     * nothing new overwrites the last check's line, not this.
     */
    latest(): { seenAt: number; verdict: Verdict } | null {
      return (stmt(db, `SELECT seen_at AS seenAt, verdict FROM ledger ORDER BY id DESC LIMIT 1`).get() as { seenAt: number; verdict: Verdict } | undefined) ?? null;
    },

    /** Ledger rows newest first, without raw bytes. `verdict` matches exactly, or as a prefix when it ends in `:` or `*`. */
    query(q: LedgerQuery): LedgerRow[] {
      const p: Record<string, unknown> = { limit: q.limit };
      const where = conditions(p);
      if (q.verdict) {
        const prefix = /[:*]$/.test(q.verdict);
        where.narrow(prefix ? 'verdict LIKE @v' : 'verdict = @v', 'v', prefix ? `${q.verdict.replace(/\*$/, '')}%` : q.verdict);
      }
      where.narrow('task_id = @t', 't', q.taskId || undefined);
      where.narrow('seen_at >= @since', 'since', q.since);
      where.narrow('seen_at <= @until', 'until', q.until);
      where.narrow('id < @before', 'before', q.before);
      const sql = `SELECT ${COLUMNS} FROM ledger ${where.sql() ? `WHERE ${where.sql()}` : ''} ORDER BY id DESC LIMIT @limit`;
      return stmt(db, sql).all(p) as LedgerRow[];
    },

    /**
     * The distinct task ids ledger rows name that equal `text`, or start with it when `prefix`
     * (exact characters, no wildcards; a range of the ledger_by_task index, as tasks.idsWithPrefix),
     * at most `limit`, sorted. Tagged mail may name a task that does not exist.
     */
    taskIdsWithPrefix(text: string, prefix: boolean, limit: number): string[] {
      const sql = prefix
        ? `SELECT DISTINCT task_id AS id FROM ledger WHERE task_id >= @t AND task_id < @t || char(1114111) AND substr(task_id, 1, length(@t)) = @t ORDER BY id LIMIT @limit`
        : `SELECT DISTINCT task_id AS id FROM ledger WHERE task_id = @t ORDER BY id LIMIT @limit`;
      const rows = stmt(db, sql).all({ t: text, limit }) as { id: string }[];
      return rows.map((r) => r.id);
    },

    /**
     * Mail tagged with this task recorded during turn `turn` (or a later one), that the gates
     * refused: every verdict but `applied:*`, `late:recorded` and `duplicate` (a copy of mail
     * judged before). Undefined when none, or no such turn. "During the turn" is by row id, from
     * where the turn noted its mail begins (src/store/turn-ledger.ts), never by `seen_at`: the
     * clock may step back. Read by ranges of ledger_by_task_verdict, one a refused verdict, newest
     * first: at most {@link REFUSED_COUNT_CAP} rows a verdict, whatever the number of rows naming
     * the task (O(log n + k)). Anyone who can mail the mailbox can tag mail with a task id: one
     * query over the task's rows, sorted, cost 320-530 ms a view with 1,000,000 forged rows naming
     * the task (attack review 8).
     */
    refusedRepliesOf(taskId: string, turn: number): RefusedReplies | undefined {
      const from = stmt(db, REFUSED_SQL.after).get(taskId, turn) as { after: number } | undefined;
      if (!from) return undefined;
      let last: { id: number; verdict: Verdict; seenAt: number } | undefined;
      let count = 0;
      for (const verdict of REFUSED_VERDICTS) {
        const newest = stmt(db, REFUSED_SQL.newest).get(taskId, verdict, from.after) as { id: number; seenAt: number } | undefined;
        if (!newest) continue;
        if (!last || newest.id > last.id) last = { ...newest, verdict };
        if (count < REFUSED_COUNT_CAP) count += (stmt(db, REFUSED_SQL.count).get(taskId, verdict, from.after) as { n: number }).n;
      }
      if (!last) return undefined;
      return { count: Math.min(count, REFUSED_COUNT_CAP), lastVerdict: last.verdict, lastSeenAt: last.seenAt, lastLedgerId: last.id };
    },

    ofTask(taskId: string): LedgerRow[] {
      return stmt(db, `SELECT ${COLUMNS} FROM ledger WHERE task_id = ? ORDER BY id`).all(taskId) as LedgerRow[];
    },

    /**
     * The rows of one task that `show` lists, oldest first, without raw bytes: the newest `newest`,
     * the first `accepted` the judge accepted (`applied:*`, `late:recorded`), and the reply row of
     * each turn; and how many rows name the task per verdict (sorted by verdict). Anyone who can
     * mail the mailbox can tag mail with a task id (README, "What happened"), so the rows read are
     * bounded (at most `newest + accepted`, plus one a turn) and so is the work but the count:
     * ranges of the index ledger_by_task_verdict (migration 18), at most `newest` ids a verdict.
     */
    shownOfTask(taskId: string, newest: number, accepted: number): { rows: LedgerRow[]; counts: { verdict: Verdict; count: number }[] } {
      const counts = stmt(db, `SELECT verdict, count(*) AS count FROM ledger WHERE task_id = ? GROUP BY verdict ORDER BY verdict`).all(taskId) as { verdict: Verdict; count: number }[];
      const byVerdict = (order: 'ASC' | 'DESC') => stmt(db, `SELECT id FROM ledger WHERE task_id = ? AND verdict = ? ORDER BY id ${order} LIMIT ?`);
      const idsOf = (order: 'ASC' | 'DESC', verdicts: readonly Verdict[], limit: number): number[] => {
        const ids = verdicts.flatMap((v) => (byVerdict(order).all(taskId, v, limit) as { id: number }[]).map((r) => r.id));
        return ids.sort((a, b) => (order === 'ASC' ? a - b : b - a)).slice(0, limit);
      };
      const verdicts = counts.map((c) => c.verdict);
      const ids = new Set([
        ...idsOf('DESC', verdicts, newest),
        ...idsOf('ASC', verdicts.filter((v) => v.startsWith('applied:') || v === 'late:recorded'), accepted),
        ...(stmt(db, `SELECT reply_ledger_id AS id FROM turns WHERE task_id = ? AND reply_ledger_id IS NOT NULL`).all(taskId) as { id: number }[]).map((r) => r.id),
      ]);
      const rows = stmt(db, `SELECT ${COLUMNS} FROM ledger WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`).all(JSON.stringify([...ids])) as LedgerRow[];
      return { rows, counts };
    },

    /**
     * The raw bytes kept for this row, exactly as they were fetched, wherever they are stored (a
     * large value, or the row itself — inflated when stored compressed); null when none were kept.
     * @throws StoreError when they are stored in an encoding this version does not read, or damaged
     */
    raw(id: number): Buffer | null {
      const r = stmt(db, `SELECT raw, raw_codec AS codec, raw_value AS rawValue FROM ledger WHERE id = ?`).get(id) as { raw: Buffer | null; codec: string | null; rawValue: number | null } | undefined;
      if (r?.rawValue != null) return largeValueReads(db).bytes(r.rawValue);
      return unpackRaw(id, r?.raw ?? null, r?.codec ?? null);
    },

    /** The newest row of tagged mail whose raw bytes were kept (`doctor` judges it again), without the bytes. */
    latestTaggedWithRaw(): LedgerRow | undefined {
      return this.taggedWithRaw(1)[0];
    },

    /** The newest `limit` rows naming a task whose raw bytes are still there, newest first, without the bytes (for `doctor`). */
    taggedWithRaw(limit: number): LedgerRow[] {
      return stmt(db, `SELECT ${COLUMNS} FROM ledger WHERE task_id IS NOT NULL AND (raw IS NOT NULL OR raw_value IS NOT NULL) ORDER BY id DESC LIMIT ?`).all(limit) as LedgerRow[];
    },

    /**
     * The newest row of a reply the judge accepted (`applied:*`, `late:recorded`: kept whole) whose
     * raw bytes are still there, without the bytes; a scan from the newest row back (for `doctor`).
     */
    latestAcceptedWithRaw(): LedgerRow | undefined {
      return stmt(db, `SELECT ${COLUMNS} FROM ledger WHERE (verdict LIKE 'applied:%' OR verdict = 'late:recorded') AND (raw IS NOT NULL OR raw_value IS NOT NULL) ORDER BY id DESC LIMIT 1`).get() as LedgerRow | undefined;
    },
    /** One ledger row without its raw bytes, whether raw bytes were kept, and whether prune thinned it (store/prune-thin.ts); undefined when no row has this id. */
    row(id: number): (LedgerRow & { hasRaw: boolean; thinned: boolean }) | undefined {
      const r = stmt(db, `SELECT ${COLUMNS}, (raw IS NOT NULL OR raw_value IS NOT NULL) AS hasRaw FROM ledger WHERE id = ?`).get(id) as (LedgerRow & { hasRaw: number }) | undefined;
      return r && { ...r, hasRaw: r.hasRaw === 1, thinned: r.rawSha256 === THIN_DIGEST };
    },
  };
}

/**
 * Raw bytes of at most this size are stored compressed (DEFLATE, RFC 1951; ledger.raw_codec
 * `deflate-raw`): a reply of a few KiB takes about 40% of its size (bytes per task:
 * bench/RESULTS.md, million). Larger ones are stored as fetched: compressing megabytes inside the
 * recording transaction would stall the event loop (64 KiB deflate in well under a millisecond).
 */
export const RAW_COMPRESS_MAX_BYTES = 64 * 1024;

/** The codecs this version reads (ledger.raw_codec; NULL: the bytes as fetched). */
const RAW_CODECS = new Set(['deflate-raw']);

function packRaw(raw: Buffer | null): { raw: Buffer | null; codec: string | null } {
  if (raw === null || raw.length === 0 || raw.length > RAW_COMPRESS_MAX_BYTES) return { raw, codec: null };
  const packed = zlib().deflateRawSync(raw);
  return packed.length < raw.length ? { raw: packed, codec: 'deflate-raw' } : { raw, codec: null };
}

/**
 * The bytes as fetched.
 * @throws StoreError for a codec this version does not know, or compressed bytes that do not
 *   inflate within {@link RAW_COMPRESS_MAX_BYTES} (a damaged row)
 */
function unpackRaw(id: number, raw: Buffer | null, codec: string | null): Buffer | null {
  if (raw === null || codec === null) return raw;
  if (!RAW_CODECS.has(codec)) {
    throw new StoreError(`ledger #${id}: raw bytes stored in an unknown encoding (raw_codec ${JSON.stringify(codec)}); this a2a-mailbridge reads ${[...RAW_CODECS].join(', ')} only: is the store from a newer version?`);
  }
  try {
    return zlib().inflateRawSync(raw, { maxOutputLength: RAW_COMPRESS_MAX_BYTES });
  } catch (err) {
    throw new StoreError(`ledger #${id}: the stored raw bytes do not inflate (${(err as Error).message}); the row is damaged (doctor checks the store)`);
  }
}

export function ledgerWrites(w: Writer) {
  return {
    /** Inserts the entry; returns its id, or null when the source was already recorded (a rescan). */
    record(e: LedgerEntry): number | null {
      const info = stmt(w.db,
        `INSERT INTO ledger (source, seen_at, message_id, from_header, subject, date_header, size, raw_sha256, raw, raw_codec, raw_value, agent, task_id, verdict, reason, received_at, dkim_b_sha256)
         VALUES (@source, @seenAt, @messageId, @fromHeader, @subject, @dateHeader, @size, @rawSha256, @raw, @codec, @rawValue, @agent, @taskId, @verdict, @reason, @receivedAt, @signature)
         ON CONFLICT(source) DO NOTHING`,
      ).run({ ...e, ...packRaw(e.raw), rawValue: e.rawValue ?? null, receivedAt: e.receivedAt ?? null, signature: e.signature ? signatureDigest(e.signature) : null });
      return info.changes === 0 ? null : Number(info.lastInsertRowid);
    },
  };
}

export type LedgerReads = ReturnType<typeof ledgerReads>;
