import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { dirname } from 'node:path';
import { commandLine, shellLine } from './config-path.js';
import { writableByOthers } from './file-safety.js';
import { isGenerated, MIN_BEARER_CHARS, missingSecretFix, secretKind } from './secret-kinds.js';

/** Thrown when a secret file is missing, unsafe or unreadable. The message names the file and the fix. */
export class SecretFileError extends Error {
  override readonly name = 'SecretFileError';
  constructor(
    message: string,
    readonly path: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Largest secret file we read, in bytes. Secrets are tokens and passwords, never documents. */
const MAX_SECRET_BYTES = 64 * 1024;

/** A placeholder of secrets.example/ (`replace-with-…`) or of `init` (`REPLACE-WITH-…`): never a real secret. */
const PLACEHOLDER = /replace-with-/i;

/** True when a secret's text still holds a placeholder (any case), which the loader refuses. */
export function holdsPlaceholder(text: string): boolean {
  return PLACEHOLDER.test(text);
}

/**
 * Whether the file at `path` holds a placeholder ({@link holdsPlaceholder}), for a file no key
 * names: read only when it is a regular file (not followed through a symlink) of this user of at
 * most 64 KiB; false for anything else, and when it cannot be read. Its content is never returned.
 */
export function fileHoldsPlaceholder(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return false;
  }
  try {
    const st = fstatSync(fd);
    const uid = process.getuid?.();
    if (!st.isFile() || st.size > MAX_SECRET_BYTES || (uid !== undefined && st.uid !== uid)) return false;
    const buf = Buffer.alloc(st.size);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return holdsPlaceholder(buf.subarray(0, n).toString('utf8'));
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
}

/** What a mode's group and other bits give away, for the refusal: `readable by others`, `readable by its group`, `writable by others`… */
function openTo(mode: number): string {
  const who = (mode & 0o007) !== 0 ? 'others' : 'its group';
  const what = (mode & 0o044) !== 0 ? 'readable' : (mode & 0o022) !== 0 ? 'writable' : 'usable';
  return `${what} by ${who}`;
}

/**
 * Reads a secret from a file the way ssh and libpq treat private files (docs/architecture.md,
 * "Operating"): opened with O_NOFOLLOW, checked on the open handle with fstat (so a swap between check and read
 * is impossible), and refused unless it is a regular file owned by the current user with no
 * group or other permission bits (`mode & 0o077 == 0`), in a folder others cannot write. One
 * trailing newline (LF or CRLF) is trimmed; any other whitespace is kept, because it may be part
 * of the secret (a password). A value still holding a `replace-with-` placeholder from
 * secrets.example is refused.
 *
 * @param path absolute path of the file
 * @param key the config key that named the file, used in error messages (e.g. `server.bearer_file`)
 * @param configFile the config file that names it, for the command a missing file's message names ('' when not known)
 * @returns the secret as a UTF-8 string
 * @throws SecretFileError when the file is a symlink, not a regular file, owned by another user,
 *   group/other-accessible, in a folder others can write, empty, or larger than 64 KiB, or (for
 *   server.bearer_file) holds fewer than {@link MIN_BEARER_CHARS} characters; the message says
 *   what to run.
 */
export function readSecretFile(path: string, key: string, configFile = ''): string {
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO must not hang start-up; the fstat below refuses it.
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') {
      throw new SecretFileError(
        `${key}: secret file ${path} is a symbolic link; point ${key} at the real file`,
        path,
        { cause: err },
      );
    }
    if (code === 'ENOENT') {
      throw new SecretFileError(
        `${key}: secret file ${path} does not exist; ${missingSecretFix(key, path, configFile)}`,
        path,
        { cause: err },
      );
    }
    throw new SecretFileError(`${key}: cannot open secret file ${path}: ${code ?? String(err)}`, path, {
      cause: err,
    });
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) {
      throw new SecretFileError(`${key}: secret file ${path} is not a regular file`, path);
    }
    const uid = process.getuid?.();
    if (uid !== undefined && st.uid !== uid) {
      throw new SecretFileError(
        `${key}: secret file ${path} is owned by uid ${st.uid}, not by this user (uid ${uid}); run: ${shellLine('chown', String(uid), path)}`,
        path,
      );
    }
    if ((st.mode & 0o077) !== 0) {
      const mode = (st.mode & 0o777).toString(8).padStart(4, '0');
      throw new SecretFileError(
        `${key}: secret file ${path} has mode ${mode}, ${openTo(st.mode)}; run: ${shellLine('chmod', '600', path)}`,
        path,
      );
    }
    // A folder others can write lets them replace the file with one of their own making.
    const dir = dirname(path);
    const dirMode = writableByOthers(dir);
    if (dirMode !== null) {
      throw new SecretFileError(
        `${key}: secret file ${path} is in ${dir}, which others can write (mode ${dirMode}), so they could replace the secret; run: ${shellLine('chmod', 'go-w', dir)}`,
        path,
      );
    }
    if (st.size > MAX_SECRET_BYTES) {
      throw new SecretFileError(`${key}: secret file ${path} is larger than 64 KiB; it should hold one secret`, path);
    }
    const buf = Buffer.alloc(st.size);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, off);
      if (n === 0) break;
      off += n;
    }
    const text = buf.subarray(0, off).toString('utf8').replace(/\r?\n$/, '');
    if (text.length === 0) {
      // A secret the bridge generates is made by `secret new` (its name: `bearer`, or the key, which
      // names the agent too), which replaces the empty file with --force.
      const kind = secretKind(key);
      const fix = isGenerated(kind) ? `run: ${commandLine(configFile, shellLine('secret', 'new', kind === 'bearer' ? 'bearer' : key, '--force'))}` : 'write the secret into it';
      throw new SecretFileError(`${key}: secret file ${path} is empty; ${fix}`, path);
    }
    if (holdsPlaceholder(text)) {
      throw new SecretFileError(`${key}: secret file ${path} still holds the placeholder from secrets.example; write the real secret into it`, path);
    }
    // The file's content is what is wrong, not the key: the fix is a new bearer (secret new writes 64 hex digits).
    if (secretKind(key) === 'bearer' && text.length < MIN_BEARER_CHARS) {
      throw new SecretFileError(
        `${key}: secret file ${path} holds ${text.length} characters; the bearer must be at least ${MIN_BEARER_CHARS}; run: ${commandLine(configFile, shellLine('secret', 'new', 'bearer', '--force'))}`,
        path,
      );
    }
    return text;
  } finally {
    closeSync(fd);
  }
}
