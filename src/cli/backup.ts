import { closeSync, constants, fchmodSync, openSync, rmSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { Store } from '../store/store.js';
import { CliFailure } from './errors.js';
import { openReadOnly, type StoreLocation } from './open-store.js';

/**
 * `a2a-mailbridge backup <file>`: an online copy of the store (SQLite's backup API through
 * better-sqlite3's `db.backup()`, consistent while the bridge keeps writing), read from a
 * read-only connection. The file is created first, exclusively and with mode 0600 — the store
 * holds raw mail and live reply tokens — so an existing file (or symlink) is never overwritten.
 * The copy is then opened and must pass `quick_check`; a failed copy is removed.
 *
 * @returns the exit code (0)
 * @throws CliFailure when `file` exists or the copy fails its check; ConfigError/StoreError
 */
export async function runBackup(where: StoreLocation, file: string): Promise<number> {
  const target = resolve(file);
  const db = openReadOnly(where);
  try {
    let fd: number;
    try {
      fd = openSync(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' || code === 'ELOOP') throw new CliFailure(`refusing to overwrite ${target}; choose a new file name`);
      throw new CliFailure(`cannot create ${target}: ${code ?? (err as Error).message}`);
    }
    fchmodSync(fd, 0o600);
    closeSync(fd);
    try {
      const { totalPages } = await db.backup(target);
      const copy = Store.open(target, { readOnly: true });
      const version = copy.schemaVersion();
      copy.close();
      const size = statSync(target).size;
      process.stdout.write(`backup written: ${target} (${size} bytes, ${totalPages} pages, schema version ${version}, quick_check ok)\n`);
      return 0;
    } catch (err) {
      rmSync(target, { force: true });
      for (const suffix of ['-wal', '-shm', '-journal']) rmSync(`${target}${suffix}`, { force: true });
      throw new CliFailure(`backup to ${target} failed and was removed: ${(err as Error).message}`);
    }
  } finally {
    db.close();
  }
}
