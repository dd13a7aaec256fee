import { existsSync } from 'node:fs';
import { plural } from '../plural.js';
import type { PruneCounts } from '../store/prune.js';
import { Store, StoreError } from '../store/store.js';
import { parseDays } from './args.js';
import { UsageError } from './errors.js';
import { isoJson, isoUtc, printJson } from './format.js';
import { openReadOnly, storeFile, type StoreLocation } from './open-store.js';
import { heldMaildirSources } from './prune-held.js';

/** Options of `a2a-mailbridge prune`. */
export interface PruneOptions {
  /** Days (fractions allowed): tasks finished, and ledger rows seen, longer ago than this go. Required. */
  olderThan?: string;
  dryRun?: boolean;
  json?: boolean;
}

/** Each count and its noun in the singular (and the plural, when it is not `noun + "s"`). */
const LABELS: [keyof PruneCounts, string, string?][] = [
  ['tasks', 'task'],
  ['turns', 'turn'],
  ['attempts', 'dispatch attempt'],
  ['messages', 'message'],
  ['artifacts', 'artifact'],
  ['replies', 'reply', 'replies'],
  ['attachments', 'attachment'],
  ['events', 'task event'],
  ['ledger', 'ledger row'],
];

/**
 * One line: `deleted 3 tasks, 4 turns, … (finished, or seen, before <cut>)`; `would delete` for a
 * dry run; and the ledger rows kept thin, when any (their Maildir files are still there).
 */
export function formatPrune(counts: PruneCounts, cut: number, dryRun: boolean): string {
  const parts = LABELS.map(([k, noun, nouns]) => plural(counts[k], noun, nouns)).join(', ');
  const thin = counts.ledgerThinned ? `; ${dryRun ? 'would keep' : 'kept'} ${plural(counts.ledgerThinned, 'ledger row')} thin: the verdict of each Maildir file still there` : '';
  return `${dryRun ? 'would delete' : 'deleted'} ${parts} (tasks finished and mail seen before ${isoUtc(cut)}; open tasks and audit entries are kept)${thin}`;
}

/**
 * `a2a-mailbridge prune --older-than <age>` (days, or an age as `--since` takes: src/cli/args.ts parseDays): deletes tasks finished before the cut with no event
 * since (terminal states only, never an open task), with their turns, attempts, messages,
 * artifacts, replies, attachments and events, and the ledger rows
 * seen before the cut that belong to no task that stays (see src/store/prune.ts) — but a row whose
 * Maildir file is still in its folder is kept thin, its verdict only (src/store/prune-thin.ts): the
 * folders are listed first (prune-held.ts). A batch of
 * tasks per transaction (`pruneInBatches`): safe while the bridge runs, which waits for one batch at most. `--dry-run` only counts, on a read-only connection.
 *
 * @returns the exit code (0)
 * @throws UsageError without `--older-than`; ConfigError/StoreError when the store cannot be opened;
 *   CliFailure when a Maildir folder the ledger has rows of cannot be listed (nothing is pruned)
 */
export async function runPrune(where: StoreLocation, o: PruneOptions, now = Date.now()): Promise<number> {
  if (o.olderThan === undefined) throw new UsageError('prune needs --older-than <age>: days (30) or an age (12h, 7d, 2w), e.g. --older-than 30');
  const cut = now - parseDays(o.olderThan, '--older-than');
  let counts: PruneCounts;
  if (o.dryRun) {
    const db = openReadOnly(where);
    try {
      counts = db.retention.countPrunable(cut, await heldMaildirSources(db.retention.maildirFolders()));
    } finally {
      db.close();
    }
  } else {
    const file = storeFile(where);
    if (!existsSync(file)) throw new StoreError(`no store at ${file}; nothing to prune`);
    const db = Store.open(file);
    try {
      counts = db.pruneInBatches(cut, undefined, await heldMaildirSources(db.retention.maildirFolders()));
    } finally {
      db.close();
    }
  }
  if (o.json) printJson({ dryRun: o.dryRun === true, cut: isoJson(cut), ...counts });
  else process.stdout.write(`${formatPrune(counts, cut, o.dryRun === true)}\n`);
  return 0;
}
