import { type LedgerRow } from '../store/ledger.js';
import { parseCount, parseTime, parseVerdict } from './args.js';
import { CliFailure, UsageError } from './errors.js';
import { inertText } from '../inert-text.js';
import { clean, elideMiddle, isoJson, isoUtc, printJson, table, truncate } from './format.js';
import { openReadOnly, storeCommand, type StoreLocation } from './open-store.js';
import { resolveLedgerTask } from './task-id.js';

/** Options of `a2a-mailbridge ledger`, as commander hands them over. */
export interface LedgerOptions {
  /** An exact verdict, or a prefix ending in `:` or `*` (`auth:`). */
  verdict?: string;
  task?: string;
  /** ISO time or age (`2h`, `7d`), on the time the message was seen. */
  since?: string;
  until?: string;
  /** A ledger id: only older rows (the next page after a listing whose oldest row had this id). */
  before?: string;
  limit?: string;
  json?: boolean;
  /** Every column whole: From, Subject and the reason are not cut. */
  wide?: boolean;
  /** A ledger id: write that message's raw bytes to stdout instead of listing. */
  raw?: string;
}

/** A ledger row as `ledger --json` prints it: never the raw bytes, only their size and digest. */
export interface LedgerJson extends Omit<LedgerRow, 'seenAt' | 'raw'> {
  seenAt: string | null;
}

export function ledgerJson(r: LedgerRow): LedgerJson {
  const { raw: _raw, seenAt, ...rest } = r as LedgerRow & { raw?: unknown };
  return { ...rest, seenAt: isoJson(seenAt) };
}

/** How wide the cut columns of `ledger` are, in characters (code points); `--wide` cuts none. */
export const LEDGER_WIDTHS = { from: 36, subject: 48, reason: 160 } as const;

/**
 * The human table of `ledger`, newest first: id (for `--raw`), time seen, verdict, task id (first
 * 8 characters), From, Subject and the reason. Header text from mail is made inert (`clean`; and `inertText`: a space
 * other than U+0020 would pass for the table's own spacing).
 * From and Subject are cut at their end, the reason in its middle ({@link elideMiddle}): its start
 * names the gate and its end what the mail lacked. With `wide`, every cell is whole (and still
 * inert); `--json` has the same rows whole too.
 */
export function formatLedger(rows: readonly LedgerRow[], o: { wide?: boolean } = {}): string {
  if (rows.length === 0) return 'no ledger rows match';
  const cut = (text: string, max: number, how: (t: string, m: number) => string = truncate): string => (o.wide ? clean(inertText(text)) : how(clean(inertText(text)), max));
  return table(
    ['ID', 'SEEN (UTC)', 'VERDICT', 'TASK', 'FROM', 'SUBJECT', 'REASON'],
    rows.map((r) => [
      String(r.id),
      isoUtc(r.seenAt),
      r.verdict,
      r.taskId ? r.taskId.slice(0, 8) : '-',
      cut(r.fromHeader ?? '-', LEDGER_WIDTHS.from),
      cut(r.subject ?? '-', LEDGER_WIDTHS.subject),
      cut(r.reason, LEDGER_WIDTHS.reason, elideMiddle),
    ]),
    // --wide pads From and Subject no wider than the cut table does: a longer cell runs on into
    // its row alone, so one forged 20,000-character Subject cannot pad every other row to its width.
    [undefined, undefined, undefined, undefined, LEDGER_WIDTHS.from, LEDGER_WIDTHS.subject],
  );
}

/**
 * `a2a-mailbridge ledger`: the mail ledger from the store, opened read-only, newest first
 * (`--limit` defaults to 50). With `--raw <id>` it writes that message's exact bytes to stdout
 * and nothing else; it refuses when stdout is a terminal, since raw mail may carry escape sequences.
 *
 * `--before <id>` pages: the rows older than that id (the ID column), so a listing continues
 * with `--before` the last id it printed.
 *
 * `--task` takes a task id or a unique prefix (the table prints 8 characters), or a task id that
 * tagged mail names.
 *
 * @returns the exit code: 0, or 1 when `--raw` names a row that does not exist or kept no bytes, or
 *   `--task` names no task and no mail
 * @throws UsageError for bad filters (or `--raw` with filters), ConfigError/StoreError
 */
export function runLedger(where: StoreLocation, o: LedgerOptions, now = Date.now()): number {
  if (o.raw !== undefined) {
    if (o.verdict ?? o.task ?? o.since ?? o.until ?? o.before ?? o.limit ?? o.json ?? o.wide) throw new UsageError('--raw <id> takes no other option');
    const id = parseCount(o.raw, '--raw', 1, Number.MAX_SAFE_INTEGER);
    if (process.stdout.isTTY) {
      throw new UsageError(`--raw writes the message's raw bytes, which may hold terminal escape sequences; redirect it: ${storeCommand(where, `ledger --raw ${id}`, `> message-${id}.eml`)}`);
    }
    const db = openReadOnly(where);
    try {
      const row = db.ledger.row(id);
      if (!row) throw new CliFailure(`no ledger row #${id}; list them with: ${storeCommand(where, 'ledger')}`);
      const raw = row.hasRaw ? db.ledger.raw(id) : null;
      if (!raw && row.thinned) throw new CliFailure(`ledger row #${id} (${row.verdict}) kept no raw bytes: prune removed them and kept only the verdict, while the file is in the Maildir (${row.source})`);
      if (!raw) throw new CliFailure(`ledger row #${id} (${row.verdict}) kept no raw bytes: only tagged mail is kept`);
      process.stdout.write(raw);
      return 0;
    } finally {
      db.close();
    }
  }
  const q = {
    limit: o.limit === undefined ? 50 : parseCount(o.limit, '--limit', 1, 1_000_000, 'rows'),
    ...(o.verdict !== undefined ? { verdict: parseVerdict(o.verdict, '--verdict') } : {}),

    ...(o.since !== undefined ? { since: parseTime(o.since, now, '--since') } : {}),
    ...(o.until !== undefined ? { until: parseTime(o.until, now, '--until') } : {}),
    ...(o.before !== undefined ? { before: parseCount(o.before, '--before', 1, Number.MAX_SAFE_INTEGER) } : {}),
  };
  const db = openReadOnly(where);
  try {
    const rows = db.ledger.query({ ...q, ...(o.task !== undefined ? { taskId: resolveLedgerTask(db, o.task, storeCommand(where, 'tasks')) } : {}) });
    if (o.json) printJson(rows.map(ledgerJson));
    else process.stdout.write(`${formatLedger(rows, o)}\n`);
    return 0;
  } finally {
    db.close();
  }
}
