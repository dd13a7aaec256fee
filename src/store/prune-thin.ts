/**
 * Thin ledger rows: what `prune` keeps of a ledger row it would delete whose Maildir file is still
 * in its folder (docs/architecture.md, "Retention and the Maildir").
 *
 * A Maildir reader knows a file as judged only by its row (`isSourceRecorded`, by source): it keeps
 * no watermark that passes it. Deleted, the row of a file still in the folder was judged again at
 * the next start — a fresh verdict, a fresh row, the prune undone. So such a row is thinned
 * instead: it keeps its source (the key the reader dedups on), `seen_at`, `verdict`, `size` and
 * `received_at`; everything else goes (the raw bytes and their large value, the header fields, the
 * task, the digests, the judge's reason). Its `raw_sha256` is {@link THIN_DIGEST}, which no judged
 * row holds and gate 1 never looks up (a SHA-256 is 64 hex digits): a thin row is known by it, and
 * a copy of its mail (another file) is judged, as it was once the row was deleted. A later prune
 * deletes the thin row once the file is gone.
 */
import type { Writer } from './db.js';

/** The raw_sha256 of a thin row (judged rows hold 64 hex digits). */
export const THIN_DIGEST = '';

/** The reason a thin row holds instead of the judge's: the bridge's words. */
export const THIN_REASON = 'pruned: only the verdict is kept, while the file is in the Maildir';

/**
 * The sources of the mail still in its mailbox: `maildir:<folder>:<key>` of every file listed in
 * the Maildir folders the ledger has rows of (src/cli/prune-held.ts). Rows of other sources (IMAP)
 * are deleted as before: the IMAP reader's UID watermark passes them.
 */
export type HeldSources = ReadonlySet<string>;

/** A ledger row that goes, as the prune's batch reads it. */
export interface GoingRow {
  id: number;
  source: string;
  /** 1 when it is thin already. */
  thin: number;
}

const IDS = `SELECT value FROM json_each(@ids)`;
/** The large values of the rows `@ids` (the trigger ledger_drops_raw_value frees them on DELETE only). */
const RAW_VALUES = `SELECT raw_value FROM ledger WHERE id IN (${IDS}) AND raw_value IS NOT NULL`;
const THIN = `UPDATE ledger SET message_id = NULL, from_header = NULL, subject = NULL, date_header = NULL, raw_sha256 = '${THIN_DIGEST}',
  raw = NULL, raw_codec = NULL, raw_value = NULL, agent = NULL, task_id = NULL, reason = @reason, dkim_b_sha256 = NULL WHERE id IN (${IDS})`;

/**
 * Deletes the rows that go, but thins those whose source is held (one already thin is left as it
 * is); inside the caller's transaction.
 * @returns the rows deleted (`ledger`) and thinned (`ledgerThinned`)
 */
export function deleteOrThin(w: Writer, rows: readonly GoingRow[], held: HeldSources): { ledger: number; ledgerThinned: number } {
  const gone: number[] = [];
  const thin: number[] = [];
  for (const r of rows) {
    if (!held.has(r.source)) gone.push(r.id);
    else if (r.thin !== 1) thin.push(r.id);
  }
  if (thin.length) {
    const ids = JSON.stringify(thin);
    w.db.prepare(`DELETE FROM large_value_chunks WHERE value_id IN (${RAW_VALUES})`).run({ ids });
    w.db.prepare(`DELETE FROM large_values WHERE id IN (${RAW_VALUES})`).run({ ids });
    w.db.prepare(THIN).run({ ids, reason: THIN_REASON });
  }
  const ledger = gone.length ? w.db.prepare(`DELETE FROM ledger WHERE id IN (${IDS})`).run({ ids: JSON.stringify(gone) }).changes : 0;
  return { ledger, ledgerThinned: thin.length };
}
