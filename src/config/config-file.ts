/**
 * Reading the config file's bytes: a regular file of at most 1 MiB, opened so that nothing a
 * path can point at (a FIFO, a device, a directory) blocks or floods the process; and whether
 * anyone but this user or root could change it ({@link configPlaceProblem}).
 */
import { closeSync, constants, fstatSync, openSync, readSync, realpathSync, statSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
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

/**
 * The config file's text (UTF-8; a byte that is not becomes U+FFFD, as before). Opened with
 * O_NONBLOCK and checked on the open handle, so a FIFO or a device (a symlink to /dev/zero) is
 * refused at once instead of blocking start-up or being read until memory runs out; a symlink to
 * a regular file is followed (a config kept with one's dotfiles).
 * @throws ConfigError when the file cannot be opened (a missing one: with the `init` that writes
 *   it, src/config/config-path.ts), is not a regular file, or is over {@link MAX_CONFIG_BYTES}
 */
export function readConfigText(file: string): string {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // Not there (ENOTDIR: a file stands where a folder of its path would be): the init that writes it.
    const fix = code === 'ENOENT' || code === 'ENOTDIR' ? `; ${missingConfigFix(file)}` : '';
    throw new ConfigError(FILE_KEY, `cannot read ${file}: ${code ?? String(err)}${fix}`, { cause: err });
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) {
      throw new ConfigError(FILE_KEY, `${file} is not a regular file (${fileKind(st)}); point --config (or A2A_MAILBRIDGE_CONFIG) at the config file itself`);
    }
    const tooLarge = (size: number): ConfigError =>
      new ConfigError(FILE_KEY, `${file} is larger than 1 MiB (${size.toLocaleString('en-US')} bytes or more); a config holds settings only: check that --config names the config file`);
    if (st.size > MAX_CONFIG_BYTES) throw tooLarge(st.size);
    // One byte more than the cap: a file that grew after the fstat is refused, never cut.
    const buf = Buffer.alloc(MAX_CONFIG_BYTES + 1);
    let got = 0;
    for (let n = 1; n > 0 && got < buf.length; got += n) n = readSync(fd, buf, got, buf.length - got, got);
    if (got > MAX_CONFIG_BYTES) throw tooLarge(got);
    return buf.subarray(0, got).toString('utf8');
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(FILE_KEY, `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  } finally {
    closeSync(fd);
  }
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
 * Why someone other than this user or root could change the config `file` (an absolute path), or
 * null. Whoever can could point the bridge at their own webhook, mailbox or DNS servers. The file
 * the path leads to (symlinks resolved), every folder above it, and every folder above the path as
 * given (where a symlink lives) must be owned by this user or root and writable by no one else
 * ({@link othersCanWrite}: a sticky folder such as /tmp is fine). The rule of OpenSSH's StrictModes
 * (sshd_config(5); `safe_path` in OpenSSH's misc.c), which checks every folder up to /.
 *
 * @throws the stat or realpath error (ENOENT, EACCES) as is
 */
export function configPlaceProblem(file: string): ConfigPlaceProblem | null {
  const real = realpathSync(file);
  const link = real === file ? '' : ` (the config ${file} is a link to ${real})`;
  const uid = process.getuid?.();
  for (const p of new Set([real, ...foldersUp(dirname(file)), ...foldersUp(dirname(real))])) {
    const st = statSync(p);
    if (uid !== undefined && st.uid !== uid && st.uid !== 0) {
      return { problem: `${p} is owned by uid ${st.uid}, neither this user (uid ${uid}) nor root, so its owner could redirect the bridge${link}`, fix: shellLine('chown', String(uid), p) };
    }
    const mode = othersCanWrite(st);
    if (mode !== null) return { problem: `${p} is writable by others (mode ${mode}), so they could redirect the bridge${link}`, fix: shellLine('chmod', 'go-w', p) };
  }
  return null;
}
