/**
 * The store's integrity check, `PRAGMA quick_check` (https://sqlite.org/pragma.html#pragma_quick_check):
 * it reads every page of the file, so its cost grows with the store (seconds for a store of a
 * million tasks). It is therefore never run when the store is opened — not at `serve` start, not
 * by the read commands — but by `doctor`, by `backup` (on the copy), and by `serve` in the
 * background on a worker thread ({@link quickCheckInWorker}), on the schedule of
 * src/core/store-upkeep.ts (`STORE_CHECK_EVERY_MS`). A page SQLite reads meanwhile is still checked by
 * SQLite itself: a damaged one fails that read with SQLITE_CORRUPT.
 */
import type { Db } from './db.js';

/** The outcome of a quick_check: `ok`, or the problems SQLite listed, on one short line. */
export interface IntegrityResult {
  ok: boolean;
  /** `ok`, or the problems (at most 300 characters). */
  detail: string;
  /**
   * The check did not run: the path did not name the file the bridge opened (moved away, deleted
   * or replaced: src/store/file-identity.ts); `ok` is false and `detail` says which. Not damage.
   */
  away?: true;
}

/** quick_check's report (one problem per line) as one short line. */
export function integrityResult(report: string): IntegrityResult {
  if (report === 'ok') return { ok: true, detail: 'ok' };
  const detail = report
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !/^\*\*\* in database/.test(l))
    .join('; ');
  return { ok: false, detail: detail.length > 300 ? `${detail.slice(0, 300)}…` : detail };
}

/**
 * quick_check's report on `db`: its rows, and if SQLite gave up part-way (a page so damaged that
 * reading on fails with SQLITE_CORRUPT), the rows before that and the error.
 */
export function quickCheckReport(db: Db): string {
  const rows: string[] = [];
  try {
    for (const r of db.prepare('PRAGMA quick_check').pluck().iterate()) rows.push(String(r));
  } catch (err) {
    rows.push(`the check stopped: ${(err as Error).message}`);
  }
  return rows.join('\n');
}

/**
 * At most this many bytes of a file are read memory-mapped by a `mapped` check
 * (https://sqlite.org/mmap.html): no read call and copy per page; a check of a store of 1.2 GB
 * took 0.95 s mapped against 1.3–1.8 s read (bench/million.ts, backup).
 */
export const CHECK_MMAP_BYTES = 64 * 1024 ** 3;

/**
 * Runs quick_check on this connection (blocking: the caller waits the whole read of the file).
 * Gives back the page cache the check filled (`shrink_memory`). `mapped` reads the file
 * memory-mapped for the check only: for a file this process has just written (`backup`'s copy),
 * never the live store — an I/O error or a file cut short under a mapping stops the process
 * (SIGBUS) instead of failing a read (https://sqlite.org/mmap.html).
 */
export function quickCheck(db: Db, o: { mapped?: boolean } = {}): IntegrityResult {
  if (o.mapped) db.pragma(`mmap_size = ${CHECK_MMAP_BYTES}`);
  try {
    return integrityResult(quickCheckReport(db));
  } finally {
    if (o.mapped) db.pragma('mmap_size = 0');
    db.pragma('shrink_memory');
  }
}

/** The worker's entry: the compiled `.js` beside this file, or the `.ts` source run through tsx. */
function workerUrl(): { url: URL; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  return { url: new URL(fromSource ? './integrity-worker.ts' : './integrity-worker.js', import.meta.url), execArgv: fromSource ? ['--import', 'tsx'] : [] };
}

/**
 * quick_check of the store file `path` on a worker thread with a read-only connection of its own,
 * so the event loop keeps serving while the file is read. The worker opens the path only while it
 * names the file `identity` (file-identity.ts `openIfSame`): a file put in the bridge's place is
 * neither checked as the bridge's nor opened with the bridge's -wal and -shm. Never rejects: an
 * error opening or reading the file is a result that is not ok, and another file there one with
 * `away`.
 * @param identity the `dev:ino` of the file the bridge's connection opened
 */
export function quickCheckInWorker(path: string, identity: string): Promise<IntegrityResult> {
  const { url, execArgv } = workerUrl();
  return new Promise((resolve) => {
    let settled = false;
    const done = (r: IntegrityResult): void => {
      if (settled) return;
      settled = true;
      resolve(r);
    };
    const w = new (process.getBuiltinModule('node:worker_threads').Worker)(url, { execArgv, workerData: { path, identity } });
    w.once('message', (m: IntegrityResult) => done(m));
    w.once('error', (err) => done({ ok: false, detail: `the check could not run: ${err.message}` }));
    w.once('exit', (code) => done({ ok: false, detail: `the check stopped (worker exit ${code})` }));
  });
}
