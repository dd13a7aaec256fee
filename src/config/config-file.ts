/**
 * Reading the config file's bytes: a regular file of at most 1 MiB, opened so that nothing a
 * path can point at (a FIFO, a device, a directory) blocks or floods the process; and whether
 * anyone but this user or root could change it ({@link configPlaceProblem}).
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readlinkSync, readSync, realpathSync, statSync, type Stats } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { missingConfigFix, shellLine } from './config-path.js';
import { ConfigError, FILE_KEY } from './fields.js';
import { othersCanWrite } from './file-safety.js';

/** Largest config file read, in bytes: the commented example is 7 KiB; a config is never a document. */
export const MAX_CONFIG_BYTES = 1024 * 1024;

/** What a path that is not a regular file is, for the error message. */
function fileKind(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return 'not a file';
}

/** A test seam: called after the place of the config is checked and before the file is opened (where a swap would land). */
export interface ConfigReadHooks {
  beforeOpen?: () => void;
}

/**
 * The config file's text (UTF-8; a byte that is not becomes U+FFFD, as before), read from the
 * place that was checked: the path is resolved once (symlinks followed: a config kept with one's
 * dotfiles), that place checked ({@link configPlaceProblem}), and then exactly the resolved path
 * opened, with O_NOFOLLOW and O_NONBLOCK, and refused unless the open file is the one checked
 * (same device and inode by fstat). So a link swapped between the check and the read cannot make
 * the bridge read another file. A FIFO or a device (a symlink to /dev/zero) is refused at once
 * instead of blocking start-up or being read until memory runs out.
 * @throws ConfigError when the file cannot be opened (a missing one: with the `init` that writes
 *   it, src/config/config-path.ts), its place is unsafe (naming the path and the chown/chmod), it
 *   changed between the check and the read, is not a regular file, or is over {@link MAX_CONFIG_BYTES}
 */
export function readCheckedConfig(file: string, hooks: ConfigReadHooks = {}): string {
  const { text, problem } = readConfigAndPlace(file, hooks);
  if (problem) throw new ConfigError(FILE_KEY, `${problem.problem}; run: ${problem.fix}`);
  return text;
}

/**
 * {@link readCheckedConfig}, with what is wrong with the config's place returned rather than
 * thrown (`doctor` still checks the secrets such a config names); the text is the checked file's.
 * @throws ConfigError as readCheckedConfig, but for the place
 */
export function readConfigAndPlace(file: string, hooks: ConfigReadHooks = {}): { text: string; problem: ConfigPlaceProblem | null } {
  let place: CheckedPlace;
  try {
    place = checkPlace(file);
  } catch (err) {
    throw cannotRead(file, err);
  }
  // A FIFO or a device is said as such, before (and whatever) its place.
  if (!place.stat.isFile()) throw notRegular(file, place.stat);
  hooks.beforeOpen?.();
  let fd: number;
  try {
    fd = openSync(place.real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    throw cannotRead(file, err);
  }
  try {
    const st = fstatSync(fd);
    if (st.dev !== place.stat.dev || st.ino !== place.stat.ino) {
      throw new ConfigError(FILE_KEY, `${place.real} changed while it was read (another file stands there now than the one checked); run the command again, and check who else can change ${dirname(place.real)}`);
    }
    return { text: readOpen(fd, file, st), problem: place.problem };
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw cannotRead(file, err);
  } finally {
    closeSync(fd);
  }
}

/** The ConfigError of a config path that is not a regular file (`st` its stat). */
function notRegular(file: string, st: Stats): ConfigError {
  return new ConfigError(FILE_KEY, `${file} is not a regular file (${fileKind(st)}); point --config (or A2A_MAILBRIDGE_CONFIG) at the config file itself`);
}

/** The ConfigError of a config that cannot be opened or read (a missing one: with its `init`). */
function cannotRead(file: string, err: unknown): ConfigError {
  const code = (err as NodeJS.ErrnoException).code;
  // Not there (ENOTDIR: a file stands where a folder of its path would be): the init that writes it.
  const fix = code === 'ENOENT' || code === 'ENOTDIR' ? `; ${missingConfigFix(file)}` : '';
  return new ConfigError(FILE_KEY, `cannot read ${file}: ${code ?? String(err)}${fix}`, { cause: err });
}

/** The text of the open config `fd` (`st` its fstat), at most {@link MAX_CONFIG_BYTES}. */
function readOpen(fd: number, file: string, st: Stats): string {
  if (!st.isFile()) throw notRegular(file, st);
  const tooLarge = (size: number): ConfigError =>
    new ConfigError(FILE_KEY, `${file} is larger than 1 MiB (${size.toLocaleString('en-US')} bytes or more); a config holds settings only: check that --config names the config file`);
  if (st.size > MAX_CONFIG_BYTES) throw tooLarge(st.size);
  // One byte more than the cap: a file that grew after the fstat is refused, never cut.
  const buf = Buffer.alloc(MAX_CONFIG_BYTES + 1);
  let got = 0;
  for (let n = 1; n > 0 && got < buf.length; got += n) n = readSync(fd, buf, got, buf.length - got, got);
  if (got > MAX_CONFIG_BYTES) throw tooLarge(got);
  return buf.subarray(0, got).toString('utf8');
}

/** What is wrong with where the config file is, and the command that fixes it. */
export interface ConfigPlaceProblem {
  /** A sentence naming the path and who could change it (`/x is writable by others (mode 0777), so …`). */
  problem: string;
  /** The command to run (`chmod go-w /x`, `chown 501 /x`). */
  fix: string;
}

/** `dir` and every folder above it, up to the root. */
function foldersUp(dir: string): string[] {
  const out = [dir];
  for (let d = dir; dirname(d) !== d; d = dirname(d)) out.push(dirname(d));
  return out;
}

/**
 * Every symlink met resolving the absolute `file`, in order, each with its lstat (links in a
 * link's target too), as realpath(3) follows them; at most 40 (SYMLOOP_MAX), else ELOOP.
 */
function linksOnPath(file: string): { path: string; st: Stats }[] {
  const links: { path: string; st: Stats }[] = [];
  const rest = file.split('/').filter((c) => c !== '');
  let cur = '/';
  while (rest.length > 0) {
    const next = join(cur, rest.shift()!);
    const st = lstatSync(next);
    if (!st.isSymbolicLink()) {
      cur = next;
      continue;
    }
    links.push({ path: next, st });
    if (links.length > 40) throw Object.assign(new Error(`too many symlinks resolving ${file}`), { code: 'ELOOP' });
    const target = readlinkSync(next);
    if (isAbsolute(target)) cur = '/';
    rest.unshift(...target.split('/').filter((c) => c !== ''));
  }
  return links;
}

/** The config's place as checked: its real path, the stat of the file there, and what is wrong with it. */
interface CheckedPlace {
  real: string;
  stat: Stats;
  problem: ConfigPlaceProblem | null;
}

/**
 * Why someone other than this user or root could change the config `file` (an absolute path), or
 * null. Whoever can could point the bridge at their own webhook, mailbox or DNS servers. The file
 * the path leads to (symlinks resolved), every folder above it, and every folder above the path as
 * given (where a symlink lives) must be owned by this user or root and writable by no one else
 * ({@link othersCanWrite}: a sticky folder such as /tmp is fine), and every symlink on the way must
 * be owned by this user or root (its owner could point it elsewhere; Linux's protected_symlinks
 * refuses such a link in a sticky folder too, proc(5)). The rule of OpenSSH's StrictModes
 * (sshd_config(5); `safe_path` in OpenSSH's misc.c), which checks every folder up to /.
 *
 * @throws the stat or realpath error (ENOENT, EACCES) as is
 */
export function configPlaceProblem(file: string): ConfigPlaceProblem | null {
  return checkPlace(file).problem;
}

/** {@link configPlaceProblem}, with the real path and the stat of the file checked (for the read that follows). */
function checkPlace(file: string): CheckedPlace {
  const real = realpathSync(file);
  const stat = statSync(real);
  const link = real === file ? '' : ` (the config ${file} is a link to ${real})`;
  const uid = process.getuid?.();
  const foreign = (st: Stats): boolean => uid !== undefined && st.uid !== uid && st.uid !== 0;
  for (const l of linksOnPath(file)) {
    if (foreign(l.st)) {
      const problem = { problem: `the symlink ${l.path} is owned by uid ${l.st.uid}, neither this user (uid ${uid}) nor root, so its owner could point it at another config${link}`, fix: `${shellLine('rm', l.path)}, and point --config at the config file itself` };
      return { real, stat, problem };
    }
  }
  for (const p of new Set([real, ...foldersUp(dirname(file)), ...foldersUp(dirname(real))])) {
    const st = p === real ? stat : statSync(p);
    if (foreign(st)) {
      return { real, stat, problem: { problem: `${p} is owned by uid ${st.uid}, neither this user (uid ${uid}) nor root, so its owner could redirect the bridge${link}`, fix: shellLine('chown', String(uid), p) } };
    }
    const mode = othersCanWrite(st);
    if (mode !== null) return { real, stat, problem: { problem: `${p} is writable by others (mode ${mode}), so they could redirect the bridge${link}`, fix: shellLine('chmod', 'go-w', p) } };
  }
  return { real, stat, problem: null };
}
