import { statSync } from 'node:fs';
import Database from 'better-sqlite3';

/**
 * Which file a connection to the store opened, and whether a path still names it: a file's device
 * and inode (`dev:ino`). A store file moved away, deleted or replaced (`mv backup.sqlite
 * bridge.sqlite`) under a running bridge keeps the bridge writing to the file it opened, while
 * the -wal and -shm at the path stay the bridge's: a second connection that opens the path by name
 * (the checkpoint worker, the background quick_check) would open the replacement with the bridge's
 * log and copy the bridge's pages into it (trial: a restored backup's 300 rows became 20).
 *
 * better-sqlite3 gives no descriptor of the file it opened (no fstat), and opening the file by its
 * descriptor (`/proc/self/fd/N`) is not sound for SQLite: it names the -wal and -shm after the path
 * it was given, and closing a descriptor of ours on the store file would drop every POSIX lock this
 * process holds on it, the bridge connection's included (https://sqlite.org/howtocorrupt.html,
 * 2.2). {@link openIfSame} instead brackets the open between two looks at the path: the file opened
 * is the expected one unless the path was changed twice within that microsecond-wide window (away
 * and back), which a rename by hand does not do.
 */

/** A file's device and inode (`dev:ino`), null when it cannot be read (missing, or `:memory:`). */
export function fileIdentity(path: string): string | null {
  try {
    const st = statSync(path, { bigint: true });
    return `${st.dev}:${st.ino}`;
  } catch {
    return null;
  }
}

/** Thrown by {@link openIfSame} when the path does not name the expected file. */
export class NotTheStoreFileError extends Error {
  override readonly name = 'NotTheStoreFileError';
}

/**
 * Opens `path` only if it names the file `identity` (`dev:ino`) both before and right after the
 * open, and before any statement runs: better-sqlite3's constructor runs none, so SQLite has then
 * opened the database file only, not the -wal or -shm it opens by name at the first read.
 * @throws NotTheStoreFileError when it does not (a connection already opened is closed first);
 *   SqliteError when the open fails
 */
export function openIfSame(path: string, identity: string, options: Database.Options = {}): Database.Database {
  const away = (seen: string | null): NotTheStoreFileError =>
    new NotTheStoreFileError(`the store file at ${path} is not the one the bridge opened (${seen === null ? 'moved away or deleted' : 'replaced by another file'})`);
  const before = fileIdentity(path);
  if (before !== identity) throw away(before);
  const db = new Database(path, { fileMustExist: true, ...options });
  const after = fileIdentity(path);
  if (after !== identity) {
    db.close();
    throw away(after);
  }
  return db;
}
