/**
 * Whether another user could read or change what the bridge writes: the store (mail, reply tokens,
 * task text) and the log. Its folder, and its files that are there already, must be this user's or
 * root's and writable by no one else; a sticky folder (such as /tmp) may be the folder, as others
 * can add files there but not replace ours (the rule of {@link othersCanWrite}). A folder missing
 * at the check is made by the bridge itself, and what stands there afterwards checked again
 * ({@link prepareDataPlaces}), so another user's mkdir between the check and ours is refused too.
 */
import { closeSync, constants, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, statSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import type { ConfigPlaceProblem } from './config-file.js';
import { shellLine, shellWord } from './config-path.js';
import { ConfigError } from './fields.js';
import { othersCanWrite } from './file-safety.js';
import { rolledLogFiles } from '../log.js';

/** What the bridge writes, for the messages: the store (and its SQLite -wal and -shm files) or the log. */
export type DataKind = 'store' | 'log';

/** The stat of `p` (`follow`: through a symlink), or null when nothing is there. @throws any other stat error */
function statOrNull(p: string, follow: boolean): Stats | null {
  try {
    return follow ? statSync(p) : lstatSync(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/**
 * Why another user could read or change the `kind` at the absolute `file`, or null: its folder
 * is owned by another user (not root) or writable by others without the sticky bit, or one of its
 * files already there (the store's `-wal` and `-shm` too; the log's numbered files, which are what
 * pino-roll writes and rotates: src/log.ts `rolledLogFiles`) is owned by another user (not root) or
 * writable by others. A store another user can reach leaks the task text and reply tokens, and
 * one they can write takes their tasks and answers (SQLite reads a WAL file it finds).
 * @param key the config key that sets the path (`store.path`, `log.file`), for the fix
 * @throws a stat error other than ENOENT (EACCES) as is
 */
export function dataPlaceProblem(file: string, kind: DataKind, key: string): ConfigPlaceProblem | null {
  const uid = process.getuid?.();
  const foreign = (st: Stats): boolean => uid !== undefined && st.uid !== uid && st.uid !== 0;
  const dir = dirname(file);
  const d = statOrNull(dir, true);
  if (d !== null) {
    if (foreign(d)) {
      return { problem: `${dir}, the ${kind}'s folder, is owned by uid ${d.uid}, neither this user (uid ${uid}) nor root, so its owner could read or replace the ${kind}`, fix: `set ${key} to a path in a folder of yours (mkdir -m 700 <folder>), or move ${shellWord(dir)} aside` };
    }
    const mode = othersCanWrite(d);
    if (mode !== null) return { problem: `${dir}, the ${kind}'s folder, is writable by others (mode ${mode}), so they could replace the ${kind}`, fix: shellLine('chmod', 'go-w', dir) };
  }
  const files = kind === 'store' ? [file, `${file}-wal`, `${file}-shm`] : [file, ...rolledLogFiles(file).map(([f]) => f)];
  for (const f of files) {
    const st = statOrNull(f, false);
    if (st === null) continue;
    if (foreign(st)) {
      return { problem: `${f} is owned by uid ${st.uid}, neither this user (uid ${uid}) nor root, so its owner could read or change the ${kind}`, fix: `move ${shellWord(f)} aside (another user made it; do not use what it holds), or set ${key} to a path in a folder of yours` };
    }
    const mode = othersCanWrite(st);
    if (mode !== null) return { problem: `${f} is writable by others (mode ${mode}), so they could change the ${kind}`, fix: shellLine('chmod', 'go-w', f) };
  }
  return null;
}

/** The store's files: the store and SQLite's `-wal` and `-shm` beside it. */
export function storeFiles(storePath: string): string[] {
  return [storePath, `${storePath}-wal`, `${storePath}-shm`];
}

/**
 * The store's files ({@link storeFiles}) that exist and are readable by group or others
 * (`mode & 0o044`), with the mode of the first, or null. Not refused (its folder may keep others
 * out): `serve` makes those of this user 0600 when it starts ({@link tightenDataFiles}), and
 * `doctor` warns: they hold the agents' answers, task text and reply tokens. A store made by this
 * version is 0600 (src/store/db.ts); an older one was 0644 under umask 022.
 * @returns `{ files, mode, mine }` (`mode` octal, `0644`; `mine`: every one is this user's, so
 *   serve will tighten them)
 */
export function storeReadableByOthers(storePath: string): { files: string[]; mode: string; mine: boolean } | null {
  const files: string[] = [];
  let mode = '';
  let mine = true;
  const uid = process.getuid?.();
  for (const f of storeFiles(storePath)) {
    const st = statOrNull(f, true);
    if (st === null || (st.mode & 0o044) === 0) continue;
    files.push(f);
    mode ||= (st.mode & 0o777).toString(8).padStart(4, '0');
    // serve opens each without following a symlink: one behind a link is not tightened.
    if ((uid !== undefined && st.uid !== uid) || statOrNull(f, false)?.isSymbolicLink()) mine = false;
  }
  return files.length === 0 ? null : { files, mode, mine };
}

/**
 * Makes each of `files` that exists, is a regular file of this user and has any group or other
 * permission (`mode & 0o077`) mode 0600: opened with O_NOFOLLOW (a symlink is left alone, never
 * followed) and O_NONBLOCK (a FIFO planted there does not block), checked by fstat, then fchmod,
 * so the file changed is the one checked. `serve` calls it at start, after
 * {@link prepareDataPlaces} has refused files another user owns or others can write, for the
 * store's files made by an older version (0644 under umask 022) and the serve claim's lock and
 * note. A file of another user (root) is left as it is; `doctor` goes on warning of it. Call it
 * before this process opens any of them with SQLite: closing another descriptor of a file drops
 * every POSIX lock the process holds on it (SQLite's own locks included: https://sqlite.org/howtocorrupt.html, 2.2).
 * @returns the files changed, in the order given
 * @throws an open error other than ENOENT, ELOOP (a symlink) or EACCES, or an fchmod error, as is
 */
export function tightenDataFiles(files: readonly string[]): string[] {
  const uid = process.getuid?.();
  const changed: string[] = [];
  for (const f of files) {
    let fd: number;
    try {
      fd = openSync(f, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ELOOP' || code === 'EACCES') continue;
      throw err;
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || (uid !== undefined && st.uid !== uid) || (st.mode & 0o077) === 0) continue;
      fchmodSync(fd, 0o600);
      changed.push(f);
    } finally {
      closeSync(fd);
    }
  }
  return changed;
}

/**
 * {@link dataPlaceProblem} of the store and of the log file (when there is one), the first found.
 * @returns the problem with the config key it is about, or null
 */
export function dataPlacesProblem(storePath: string, logFile: string | undefined): (ConfigPlaceProblem & { key: string }) | null {
  const store = dataPlaceProblem(storePath, 'store', 'store.path');
  if (store) return { ...store, key: 'store.path' };
  const log = logFile === undefined ? null : dataPlaceProblem(logFile, 'log', 'log.file');
  return log ? { ...log, key: 'log.file' } : null;
}

/** A test seam of {@link prepareDataPlaces}: called just before the bridge makes a missing folder `dir` (where another user's mkdir would race ours). */
export interface DataPlaceHooks {
  beforeMkdir?: (dir: string) => void;
}

/**
 * Makes the folders of `file` that are missing, from the top, each with mkdir(2) mode 0700 and
 * without `recursive` (so one that appeared meanwhile is EEXIST, not silently taken), and checks
 * each by lstat (a symlink not followed): a folder, this user's or root's, writable by no one
 * else (a sticky one allowed, {@link othersCanWrite}). So a folder another user made in a shared
 * sticky parent (/tmp) between the check of {@link dataPlaceProblem} and the mkdir is refused on
 * the first start, as the next start's check would.
 * @returns what is wrong with a folder found in the bridge's stead, or null
 * @throws ConfigError of `key` when a folder cannot be made (EACCES), naming it and the fix
 */
function makeDataFolders(file: string, kind: DataKind, key: string, hooks: DataPlaceHooks): ConfigPlaceProblem | null {
  const missing: string[] = [];
  for (let d = dirname(file); d !== dirname(d) && statOrNull(d, true) === null; d = dirname(d)) missing.unshift(d);
  const uid = process.getuid?.();
  for (const dir of missing) {
    hooks.beforeMkdir?.(dir);
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') throw new ConfigError(key, `cannot create ${dir}, the ${kind}'s folder: ${code ?? String(err)}; create it yourself (${shellLine('mkdir', '-m', '700', '-p', dir)}) or set ${key} to a path in a folder of yours`, { cause: err });
    }
    const st = lstatSync(dir);
    const aside = `move ${shellWord(dir)} aside (another user may have made it; do not use what it holds), or set ${key} to a path in a folder of yours`;
    if (!st.isDirectory()) {
      return { problem: `${dir}, the ${kind}'s folder, was missing and is now ${st.isSymbolicLink() ? 'a symlink' : 'not a folder'} made by someone else while the bridge was creating it`, fix: aside };
    }
    if (uid !== undefined && st.uid !== uid && st.uid !== 0) {
      return { problem: `${dir}, the ${kind}'s folder, was made by uid ${st.uid} while the bridge was creating it, neither this user (uid ${uid}) nor root, so its owner could read or replace the ${kind}`, fix: aside };
    }
    const mode = othersCanWrite(st);
    if (mode !== null) return { problem: `${dir}, the ${kind}'s folder, is writable by others (mode ${mode}), so they could replace the ${kind}`, fix: shellLine('chmod', 'go-w', dir) };
  }
  return null;
}

/**
 * Refuses to start on a store or log another user could read or change ({@link dataPlacesProblem}),
 * and makes their missing folders itself, checking what it gets ({@link makeDataFolders}): `serve`
 * calls it before it opens either.
 * @throws ConfigError of `store.path` or `log.file`, naming the path and the fix
 */
export function prepareDataPlaces(storePath: string, logFile: string | undefined, hooks: DataPlaceHooks = {}): void {
  const fail = (key: string, p: ConfigPlaceProblem): never => {
    throw new ConfigError(key, `${p.problem}; ${p.fix.startsWith('chmod ') ? 'run: ' : ''}${p.fix}`);
  };
  const p = dataPlacesProblem(storePath, logFile);
  if (p) fail(p.key, p);
  const store = makeDataFolders(storePath, 'store', 'store.path', hooks);
  if (store) fail('store.path', store);
  const log = logFile === undefined ? null : makeDataFolders(logFile, 'log', 'log.file', hooks);
  if (log) fail('log.file', log);
}
