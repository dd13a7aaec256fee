import { statSync } from 'node:fs';
import type { Db } from './db.js';

/**
 * Bounds on the write-ahead log (SQLite WAL, https://sqlite.org/wal.html). A reader that holds a
 * snapshot (the `sqlite3` shell, a slow `tasks`) keeps every checkpoint from finishing, so the WAL
 * grows with each write — 4 MB to 60 MB in one trial — and SQLite never shrinks it afterwards on
 * its own. `PRAGMA journal_size_limit` (set by openDb) cuts it back to this size whenever a writer
 * restarts the log; {@link shrinkWal} truncates it once the readers have let go.
 */
export const WAL_LIMIT_BYTES = 4 * 1024 * 1024;

/** The size of the store's WAL file in bytes (0 when there is none, or for `:memory:`). */
export function walBytes(db: Db): number {
  if (db.memory) return 0;
  try {
    return statSync(`${db.name}-wal`).size;
  } catch {
    return 0;
  }
}

/**
 * When the WAL is over {@link WAL_LIMIT_BYTES}: `PRAGMA wal_checkpoint(TRUNCATE)`, which copies
 * the log into the database and truncates it to 0 bytes. It never waits: the busy timeout is 0 for
 * the call, so while a reader still holds an old snapshot it returns at once (and a later call
 * tries again). Call it outside a transaction.
 *
 * @returns the WAL size before and after, in bytes, and whether a reader kept it from finishing
 */
export function shrinkWal(db: Db): { before: number; after: number; busy: boolean } {
  const before = walBytes(db);
  if (before <= WAL_LIMIT_BYTES) return { before, after: before, busy: false };
  const timeout = db.pragma('busy_timeout', { simple: true }) as number;
  db.pragma('busy_timeout = 0');
  let busy: boolean;
  try {
    const [r] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number; log: number; checkpointed: number }[];
    busy = (r?.busy ?? 1) !== 0;
  } catch {
    busy = true; // SQLITE_BUSY: a writer of another process holds the lock; next time
  } finally {
    db.pragma(`busy_timeout = ${timeout}`);
  }
  return { before, after: walBytes(db), busy };
}

/**
 * `PRAGMA wal_checkpoint(TRUNCATE)` whatever the WAL's size: every committed page copied into the
 * file this connection opened, and the log cut to 0 bytes (before a close that leaves the -wal
 * behind: store.ts `closeAndJoin`). Waits for readers up to the busy timeout.
 * @returns whether it finished (false: a reader held it back, or it failed)
 */
export function emptyWal(db: Db): boolean {
  try {
    const [r] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
    return (r?.busy ?? 1) === 0;
  } catch {
    return false;
  }
}
