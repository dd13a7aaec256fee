import type { Verdict } from '../uplink/verdicts.js';
import type { Db } from './db.js';
import { stmt } from './statements.js';

/** One fetched message and the verdict the gate stack gave it (BRIEF §5). Recorded once per source. */
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
  /** The raw bytes, kept for tagged mail only (evidence); null otherwise. */
  raw: Buffer | null;
  agent: string | null;
  taskId: string | null;
  verdict: Verdict;
  /** Which gate refused it and on what (header, value), or what was applied. */
  reason: string;
  /** When the mailbox received it (IMAP INTERNALDATE, Maildir mtime), ms since the epoch; null if unknown. */
  receivedAt?: number | null;
}

export interface LedgerRow extends LedgerEntry {
  id: number;
}

const COLUMNS = `id, source, seen_at AS seenAt, message_id AS messageId, from_header AS fromHeader, subject,
  date_header AS dateHeader, size, raw_sha256 AS rawSha256, agent, task_id AS taskId, verdict, reason, received_at AS receivedAt`;

/** Inserts the entry; returns its id, or null when the source was already recorded (a rescan). */
export function recordVerdict(db: Db, e: LedgerEntry): number | null {
  const info = stmt(db, 
      `INSERT INTO ledger (source, seen_at, message_id, from_header, subject, date_header, size, raw_sha256, raw, agent, task_id, verdict, reason, received_at)
       VALUES (@source, @seenAt, @messageId, @fromHeader, @subject, @dateHeader, @size, @rawSha256, @raw, @agent, @taskId, @verdict, @reason, @receivedAt)
       ON CONFLICT(source) DO NOTHING`,
    )
    .run({ ...e, receivedAt: e.receivedAt ?? null });
  return info.changes === 0 ? null : Number(info.lastInsertRowid);
}

export function isSourceRecorded(db: Db, source: string): boolean {
  return stmt(db, `SELECT 1 FROM ledger WHERE source = ?`).get(source) !== undefined;
}

/** Gate 1: the same raw bytes were recorded before (a re-upload or a rescan). */
export function hasRawDigest(db: Db, rawSha256: string): boolean {
  return stmt(db, `SELECT 1 FROM ledger WHERE raw_sha256 = ? LIMIT 1`).get(rawSha256) !== undefined;
}

/** Gate 8a: a message with this Message-ID was already promoted (or kept late) for this task. */
export function isMessageIdApplied(db: Db, taskId: string, messageId: string): boolean {
  return (
    stmt(db, 
        `SELECT 1 FROM ledger WHERE task_id = ? AND message_id = ? AND (verdict LIKE 'applied:%' OR verdict = 'late:recorded') LIMIT 1`,
      )
      .get(taskId, messageId) !== undefined
  );
}

export interface LedgerQuery {
  verdict?: string;
  taskId?: string;
  since?: number;
  until?: number;
  limit: number;
}

/** Ledger rows newest first, without raw bytes. `verdict` matches exactly, or as a prefix when it ends in `:` or `*`. */
export function queryLedger(db: Db, q: LedgerQuery): LedgerRow[] {
  const where: string[] = [];
  const p: Record<string, unknown> = { limit: q.limit };
  if (q.verdict) {
    if (/[:*]$/.test(q.verdict)) {
      where.push(`verdict LIKE @v`);
      p.v = `${q.verdict.replace(/\*$/, '')}%`;
    } else {
      where.push('verdict = @v');
      p.v = q.verdict;
    }
  }
  if (q.taskId) {
    where.push('task_id = @t');
    p.t = q.taskId;
  }
  if (q.since !== undefined) {
    where.push('seen_at >= @since');
    p.since = q.since;
  }
  if (q.until !== undefined) {
    where.push('seen_at <= @until');
    p.until = q.until;
  }
  const sql = `SELECT ${COLUMNS} FROM ledger ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT @limit`;
  return stmt(db, sql).all(p) as LedgerRow[];
}

/**
 * The distinct task ids ledger rows name that equal `text`, or start with it when `prefix` (exact
 * characters, no wildcards), at most `limit`, sorted. Tagged mail may name a task that does not exist.
 */
export function ledgerTaskIdsWithPrefix(db: Db, text: string, prefix: boolean, limit: number): string[] {
  const sql = prefix
    ? `SELECT DISTINCT task_id AS id FROM ledger WHERE substr(task_id, 1, ?) = ? ORDER BY id LIMIT ?`
    : `SELECT DISTINCT task_id AS id FROM ledger WHERE task_id = ? ORDER BY id LIMIT ?`;
  const rows = (prefix ? stmt(db, sql).all(text.length, text, limit) : stmt(db, sql).all(text, limit)) as { id: string }[];
  return rows.map((r) => r.id);
}

/** Tagged mail for one task that the gates refused: how many (counted up to {@link REFUSED_COUNT_CAP}) and the newest. */
export interface RefusedReplies {
  count: number;
  /** The newest refusal's verdict (a name from the verdict table: bridge text, never the mail's). */
  lastVerdict: Verdict;
  lastSeenAt: number;
  lastLedgerId: number;
}

/** The count of {@link refusedRepliesOf} stops here, so a flood of forged mail costs a bounded read. */
export const REFUSED_COUNT_CAP = 1000;

/**
 * Mail tagged with this task, seen at or after `since` (ms), that the gates refused: every verdict
 * but `applied:*`, `late:recorded` and `duplicate` (a copy of mail judged before). Undefined when none.
 */
export function refusedRepliesOf(db: Db, taskId: string, since: number): RefusedReplies | undefined {
  const refused = `task_id = ? AND seen_at >= ? AND verdict NOT LIKE 'applied:%' AND verdict NOT IN ('late:recorded', 'duplicate')`;
  const last = stmt(db, `SELECT id, verdict, seen_at AS seenAt FROM ledger WHERE ${refused} ORDER BY id DESC LIMIT 1`).get(taskId, since) as
    | { id: number; verdict: Verdict; seenAt: number }
    | undefined;
  if (!last) return undefined;
  const { n } = stmt(db, `SELECT count(*) AS n FROM (SELECT 1 FROM ledger WHERE ${refused} LIMIT ${REFUSED_COUNT_CAP})`).get(taskId, since) as { n: number };
  return { count: n, lastVerdict: last.verdict, lastSeenAt: last.seenAt, lastLedgerId: last.id };
}

export function ledgerOfTask(db: Db, taskId: string): LedgerRow[] {
  return stmt(db, `SELECT ${COLUMNS} FROM ledger WHERE task_id = ? ORDER BY id`).all(taskId) as LedgerRow[];
}

export function rawOf(db: Db, id: number): Buffer | null {
  const r = stmt(db, `SELECT raw FROM ledger WHERE id = ?`).get(id) as { raw: Buffer | null } | undefined;
  return r?.raw ?? null;
}

/** One ledger row without its raw bytes, and whether raw bytes were kept (tagged mail only); undefined when no row has this id. */
export function getLedgerRow(db: Db, id: number): (LedgerRow & { hasRaw: boolean }) | undefined {
  const r = stmt(db, `SELECT ${COLUMNS}, raw IS NOT NULL AS hasRaw FROM ledger WHERE id = ?`).get(id) as
    | (LedgerRow & { hasRaw: number })
    | undefined;
  return r && { ...r, hasRaw: r.hasRaw === 1 };
}
