import { closeSync, constants, fchmodSync, openSync, rmSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { commandLine, shellLine } from '../config/config-path.js';
import { Store } from '../store/store.js';
import { CliFailure } from './errors.js';
import { printJson } from './format.js';
import { openReadOnly, type StoreLocation } from './open-store.js';

/** What `backup --json` prints. */
export interface BackupReport {
  file: string;
  bytes: number;
  pages: number;
  schemaVersion: number;
  quickCheck: 'ok';
}

/**
 * Refuses, with the command that fixes it, a target whose folder is missing or not a folder.
 * @throws CliFailure
 */
function checkFolder(target: string): void {
  const dir = dirname(target);
  let st;
  try {
    st = statSync(dir);
  } catch {
    throw new CliFailure(`the folder ${dir} does not exist; create it first (${shellLine('mkdir', '-m', '700', '-p', dir)}) or choose a file in an existing folder`);
  }
  if (!st.isDirectory()) throw new CliFailure(`${dir} is not a folder; choose a file in an existing folder`);
}

/**
 * `a2a-mailbridge backup <file> [--json]`: an online copy of the store (SQLite's backup API through
 * better-sqlite3's `db.backup()`, consistent while the bridge keeps writing), read from a
 * read-only connection. The file is created first, exclusively and with mode 0600 — the store
 * holds raw mail and live reply tokens — so an existing file (or symlink) is never overwritten.
 * The copy is then switched from WAL to a rollback journal (`journal_mode = DELETE`), so it is
 * one self-contained file with no `-wal`/`-shm` beside it, and must pass `quick_check`; a failed
 * copy is removed.
 *
 * @returns the exit code (0)
 * @throws CliFailure when `file` exists, its folder does not, or the copy fails its check;
 *   ConfigError/StoreError
 */
export async function runBackup(where: StoreLocation, file: string, o: { json?: boolean } = {}): Promise<number> {
  const target = resolve(file);
  checkFolder(target);
  const db = openReadOnly(where);
  try {
    let fd: number;
    try {
      fd = openSync(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' || code === 'ELOOP') throw new CliFailure(`refusing to overwrite ${target}; choose a new file name`);
      if (code === 'EACCES' || code === 'EPERM') throw new CliFailure(`cannot create ${target}: no write permission in ${dirname(target)}; choose a folder of yours`);
      throw new CliFailure(`cannot create ${target}: ${code ?? (err as Error).message}`);
    }
    fchmodSync(fd, 0o600);
    closeSync(fd);
    try {
      const { totalPages } = await db.backup(target);
      // The copy carries the store's WAL mode in its header: switch it to a rollback journal so it
      // is one file, and no reader of the backup leaves -wal/-shm files beside it.
      const copy = Store.open(target);
      let version: number;
      try {
        copy.useRollbackJournal();
        // The copy was just written by this process: read it memory-mapped (integrity.ts).
        const check = copy.quickCheck({ mapped: true });
        if (!check.ok) throw new Error(`the copy failed quick_check (${check.detail}); the store itself is damaged${where.db === undefined ? `: ${commandLine(where.configFile, 'doctor')}` : ''}`);
        version = copy.schemaVersion();
      } finally {
        copy.close();
      }
      const report: BackupReport = { file: target, bytes: statSync(target).size, pages: totalPages, schemaVersion: version, quickCheck: 'ok' };
      if (o.json) printJson(report);
      else process.stdout.write(`backup written: ${target} (${report.bytes} bytes, ${totalPages} pages, schema version ${version}, quick_check ok)\n`);
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
