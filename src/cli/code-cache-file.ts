/**
 * The file that holds the bundle's V8 code cache (src/cli/entry.ts): a header line, then V8's
 * bytes.
 *
 *     a2a-mailbridge code cache 2 <identity of the bundle file> <SHA-256 of V8's bytes, hex>\n<V8's bytes>
 *
 * V8 checks a cache only against its own version, its flags and the *length* of the source, and a
 * release build does not check the bytes themselves: a cache of another bundle of the same length
 * runs that bundle's code, and a damaged one (a write cut short by a power cut) crashes the process
 * (SIGSEGV) at every start. So a cache is used only when the header names this very bundle file
 * and the bytes hash to what it says; anything else reads as no cache, and the next `serve` writes
 * a new one. Never throws: a cache is an optimisation (docs/architecture.md, "Start-up and memory").
 */
import { closeSync, constants, fstatSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { hash, randomBytes } from 'node:crypto';
import { dirname } from 'node:path';

/** The header's first bytes; the number is the format's version. */
const MAGIC = 'a2a-mailbridge code cache 2 ';
/** A cache file larger than this, in bytes, is not read (the bundle's is about 650 KiB). */
export const CACHE_MAX_BYTES = 32 * 1024 * 1024;
/** Opened for reading: never through a symlink, never blocking on a FIFO. */
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
/** Created for writing: a new file only (never one planted at the name, nor through a symlink). */
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * V8's bytes of the cache at `path` when its header names `identity` and they hash to what the
 * header says; undefined for anything else (no file, not a regular file, a symlink, over
 * {@link CACHE_MAX_BYTES}, another file's cache, damaged bytes).
 */
export function readCodeCache(path: string, identity: string): Buffer | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, READ_FLAGS);
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > CACHE_MAX_BYTES) return undefined;
    const file = readFileSync(fd);
    const got = file.length;
    if (got > CACHE_MAX_BYTES) return undefined;
    const prefix = Buffer.from(`${MAGIC}${identity} `);
    const end = prefix.length + 64;
    if (got <= end || !file.subarray(0, prefix.length).equals(prefix) || file[end] !== 0x0a) return undefined;
    const data = file.subarray(end + 1, got);
    return hash('sha256', data, 'hex') === file.toString('latin1', prefix.length, end) ? data : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Writes V8's bytes `data` as the cache of the bundle file `identity` at `path` (its folder made
 * 0700 when missing): into a new file of mode 0600 beside it, flushed to disk, then renamed over
 * `path`, so a start running meanwhile reads the old cache or the new one, whole. A file left
 * aside by a failure is removed.
 * @returns true when the cache was written
 */
export function writeCodeCache(path: string, identity: string, data: Buffer): boolean {
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  let fd: number | undefined;
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    fd = openSync(tmp, CREATE_FLAGS, 0o600);
    const header = Buffer.from(`${MAGIC}${identity} ${hash('sha256', data, 'hex')}\n`);
    for (const part of [header, data]) {
      for (let at = 0; at < part.length; ) at += writeSync(fd, part, at, part.length - at);
    }
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(tmp, path);
    return true;
  } catch {
    if (fd !== undefined) closeSync(fd);
    try {
      unlinkSync(tmp);
    } catch {
      // never created, or already renamed
    }
    return false;
  }
}
