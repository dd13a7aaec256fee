/**
 * The file-system reads of a Maildir folder, none of which changes anything: the folder's
 * UIDVALIDITY, the directories' mtimes, a listing of `new/` and `cur/` by unique name, an lstat of
 * one entry and a read of the start of one file. Stateless: what is remembered between checks lives
 * in `maildir-mailbox.ts`. Errors that say something about the process or the system
 * (EMFILE…) throw a `MailboxError` of kind `io` and fail the check; errors about one file are
 * returned as values, so one bad file never stops the mailbox (docs/architecture.md, the mailbox).
 */
import { isUtf8 } from 'node:buffer';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { close, fstat, lstat, open, read, readdir, stat } from './fs-calls.js';
import { MailboxError, type UnreadableReason } from './mailbox.js';
import { headerEnd } from './raw-headers.js';

/** A header block is read in steps of this many bytes, up to the cap the caller gives. */
export const HEAD_STEP_BYTES = 16 * 1024;
/** Errors that say nothing about one file but about the process or the system: the check fails and is retried. */
const TRANSIENT_CODES = new Set(['EMFILE', 'ENFILE', 'ENOMEM', 'EAGAIN', 'EBUSY', 'EINTR', 'ETIMEDOUT']);
/** Open flags: never follow a symlink swapped in after the lstat; never block on a FIFO. */
export const OPEN_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;

/** The two Maildir subdirectories that hold delivered mail. */
export type Sub = 'new' | 'cur';

/**
 * Where a file is: its subdirectory and name. A file name is bytes (POSIX); `name` is it as text
 * when it is valid UTF-8, and otherwise `/x` and the hex of its bytes (a `/` cannot occur in a file
 * name, so the two forms never meet), with the real bytes in `bytes` for every file-system call.
 */
export interface FileName {
  sub: Sub;
  name: string;
  bytes?: Buffer;
}

/** One entry of a listing: where the file is now and its directory entry (type from d_type). */
export interface ListedEntry extends FileName {
  dirent: fs.Dirent | fs.Dirent<Buffer>;
}

/** A read of one file: its first bytes and its size now, or why not. */
export type Read = { ok: Buffer; size: number } | { gone: true } | { skip: true } | { unreadable: UnreadableReason; detail: string };

/** An lstat of one entry: a regular file's mtime (ms, floored) and size, not a regular file, gone, or not lstat-able now. */
export type Lstat = { mtimeMs: number; size: number } | 'not-a-file' | 'gone' | 'retry';

/** The directories' modification times in ns (null: that directory does not exist). */
export interface DirTimes {
  newM: bigint | null;
  curM: bigint | null;
}

/**
 * The folder's UIDVALIDITY: the folder directory's birth time in ns, in decimal (the inode number
 * on file systems that report no birth time). It stays the same for the life of the folder and
 * changes when the folder is replaced (deleted and created again, or another directory moved into
 * its place). Not the inode alone: ext4 and tmpfs hand a freshly deleted directory's inode number
 * to the next mkdir.
 * @throws MailboxError io when the folder is missing or not a directory
 */
export async function readUidValidity(folder: string): Promise<string> {
  try {
    const s = await stat(folder, { bigint: true });
    if (!s.isDirectory()) throw new MailboxError(`Maildir ${folder} is not a directory`, 'io');
    return (s.birthtimeNs > 0n ? s.birthtimeNs : s.ino).toString(10);
  } catch (err) {
    if (err instanceof MailboxError) throw err;
    throw ioError(`cannot read the Maildir ${folder}`, err);
  }
}

/**
 * Every entry of new/ then cur/ by unique name (a name in both, mid-move, is taken from cur/;
 * different files sharing one are keyed apart: {@link keyApart}); dot files are not mail.
 * @throws MailboxError io when neither directory exists (not a Maildir) or one cannot be listed
 */
export async function listFolder(folder: string): Promise<Map<string, ListedEntry>> {
  const out = new Map<string, ListedEntry>();
  const all: { unique: string; entry: ListedEntry }[] = [];
  let found = 0;
  for (const sub of ['new', 'cur'] as const) {
    let dirents: fs.Dirent[];
    try {
      dirents = await readdir(join(folder, sub), { withFileTypes: true });
      found++;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw ioError(`cannot list ${join(folder, sub)}`, err);
    }
    let undecodable = false;
    for (const d of dirents) {
      if (d.name.startsWith('.')) continue;
      // readdir decodes names as UTF-8: one that is not came back with U+FFFD and names no file.
      if (d.name.includes('\uFFFD')) undecodable = true;
      else all.push({ unique: uniqueName(d.name), entry: { sub, name: d.name, dirent: d } });
    }
    if (undecodable) all.push(...(await listBytes(folder, sub)));
  }
  if (found === 0) throw new MailboxError(`${folder} is not a Maildir: it has neither new/ nor cur/`, 'io');
  const shared = new Map<string, ListedEntry[]>();
  for (const { unique, entry } of all) {
    const was = out.get(unique);
    if (was) {
      const list = shared.get(unique);
      if (list) list.push(entry); // never copied: a copy per file was quadratic in the files sharing a name
      else shared.set(unique, [was, entry]);
    }
    out.set(unique, entry);
  }
  for (const [unique, entries] of shared) await keyApart(folder, unique, entries, out);
  return out;
}

/**
 * Files that share a unique name (`X:2,` in new/ and `X:2,S` in cur/, or `Y` and `Y:2,T`): the
 * same file when they share an inode (a MUA moving it by link and unlink: it is listed once, from
 * cur/), else different mail, each listed under its own key so each gets a verdict. The file
 * listed last (cur/ first) keeps the unique name; every other inode is keyed
 * `<unique name>/ino<inode>` (no file name holds a `/`, so no unique name is ever one of these),
 * from its last entry. A file gone since the listing is dropped; one that cannot be lstat'ed stays
 * behind the unique name.
 * @param entries the files in listing order (new/ then cur/)
 * @param out the listing, `unique` already mapped to the last of `entries`
 */
async function keyApart(folder: string, unique: string, entries: ListedEntry[], out: Map<string, ListedEntry>): Promise<void> {
  const inodes = await Promise.all(entries.map(async (e) => {
    try {
      return (await lstat(pathOf(folder, e), { bigint: true })).ino;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (TRANSIENT_CODES.has(code)) throw ioError(`cannot lstat ${shownPath(pathOf(folder, e))}`, err);
      return code === 'ENOENT' ? 'gone' : null;
    }
  }));
  let k = entries.length - 1;
  while (k >= 0 && inodes[k] === 'gone') k--;
  if (k < 0) return void out.delete(unique);
  out.set(unique, entries[k]!);
  const seen = new Set([inodes[k]]);
  for (let i = k - 1; i >= 0; i--) {
    const ino = inodes[i]!;
    if (ino === 'gone' || ino === null || seen.has(ino)) continue;
    seen.add(ino);
    out.set(`${unique}/ino${ino}`, entries[i]!);
  }
}

/**
 * The entries of one subdirectory whose names contain U+FFFD once decoded (a name that is not
 * UTF-8, or one that holds U+FFFD itself), listed again as bytes.
 * @throws MailboxError io when the directory cannot be listed
 */
async function listBytes(folder: string, sub: Sub): Promise<{ unique: string; entry: ListedEntry }[]> {
  let dirents: fs.Dirent<Buffer>[];
  try {
    dirents = await readdir(join(folder, sub), { withFileTypes: true, encoding: 'buffer' });
  } catch (err) {
    throw ioError(`cannot list ${join(folder, sub)}`, err);
  }
  const out: { unique: string; entry: ListedEntry }[] = [];
  for (const d of dirents) {
    if (d.name[0] === 0x2e /* . */) continue;
    const colon = d.name.indexOf(0x3a);
    const uniqueBytes = colon < 0 ? d.name : d.name.subarray(0, colon);
    if (isUtf8(d.name)) {
      const name = d.name.toString('utf8');
      if (name.includes('\uFFFD')) out.push({ unique: uniqueName(name), entry: { sub, name, dirent: d } });
      continue;
    }
    out.push({ unique: textOf(uniqueBytes), entry: { sub, name: textOf(d.name), bytes: Buffer.from(d.name), dirent: d } });
  }
  return out;
}

/** A file name's bytes as text: itself when UTF-8, else `/x` and its hex (see {@link FileName}). */
function textOf(bytes: Buffer): string {
  return isUtf8(bytes) ? bytes.toString('utf8') : `/x${bytes.toString('hex')}`;
}

/** The path of a file for the file-system calls: a string, or bytes when its name is not UTF-8. */
export function pathOf(folder: string, f: FileName): string | Buffer {
  const dir = join(folder, f.sub);
  return f.bytes ? Buffer.concat([Buffer.from(`${dir}/`), f.bytes]) : join(dir, f.name);
}

/** A path as text for messages and logs (bytes that are not UTF-8 shown as U+FFFD). */
export function shownPath(path: string | Buffer): string {
  return typeof path === 'string' ? path : path.toString('utf8');
}

/**
 * The modification times (ns) of new/ and cur/, read before any listing: a file added, removed
 * or renamed changes its directory's mtime.
 * @throws MailboxError io when either is missing (not a Maildir, or not a whole one) or cannot be stat'ed
 */
export async function dirTimes(folder: string): Promise<DirTimes> {
  const time = async (sub: Sub): Promise<bigint | null> => {
    try {
      return (await stat(join(folder, sub), { bigint: true })).mtimeNs;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw ioError(`cannot stat ${join(folder, sub)}`, err);
    }
  };
  const [newM, curM] = await Promise.all([time('new'), time('cur')]);
  if (newM === null && curM === null) throw new MailboxError(`${folder} is not a Maildir: it has neither new/ nor cur/`, 'io');
  // A delivery writes into tmp/ and moves the file to new/; a reader moves it on to cur/: without
  // either, mail stops arriving or being kept, which `doctor` fails too (https://cr.yp.to/proto/maildir.html).
  const missing = newM === null ? 'new' : curM === null ? 'cur' : null;
  if (missing) throw new MailboxError(`${folder} is not a whole Maildir: it has no ${missing}/ (mail is delivered into new/ and moved to cur/); make it: mkdir -p ${join(folder, missing)}`, 'io');
  return { newM, curM };
}

/**
 * lstat of one entry (never follows a symlink), a synchronous call on the main thread (a few µs;
 * the caller yields to the event loop between slices: maildir-sync-reads.ts).
 * @throws MailboxError io on a process-wide shortage (EMFILE…); any other error about the file is
 *   `retry` (EACCES on the directory…: tried again next check) or `gone` (ENOENT)
 */
export function lstatEntry(path: string | Buffer): Lstat {
  try {
    const s = fs.lstatSync(path);
    return s.isFile() ? { mtimeMs: Math.floor(s.mtimeMs), size: s.size } : 'not-a-file';
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    if (TRANSIENT_CODES.has(code)) throw ioError(`cannot lstat ${shownPath(path)}`, err);
    return code === 'ENOENT' ? 'gone' : 'retry';
  }
}

/**
 * Reads up to `cap` bytes from the start of a file: opened with O_NOFOLLOW and O_NONBLOCK and
 * checked with fstat, so a symlink or FIFO swapped in after the lstat is skipped. With
 * `headerOnly`, reads in steps of 16 KiB and stops once the bytes read hold the empty line that
 * ends the header block (a header read costs the header, not the cap).
 * @throws MailboxError io on a process-wide shortage (EMFILE…); EACCES/EPERM is `unreadable:
 *   permission`, other errors `unreadable: io`
 */
export async function readFileStart(path: string | Buffer, cap: number, headerOnly: boolean): Promise<Read> {
  let fd: number | undefined;
  try {
    fd = await open(path, OPEN_FLAGS);
    const st = await fstat(fd);
    if (!st.isFile()) return { skip: true };
    const buf = Buffer.alloc(Math.min(cap, st.size));
    let got = 0;
    while (got < buf.length) {
      const want = headerOnly ? Math.min(buf.length - got, HEAD_STEP_BYTES) : buf.length - got;
      const { bytesRead } = await read(fd, buf, got, want, got);
      if (bytesRead === 0) break;
      got += bytesRead;
      if (headerOnly && headerEnd(buf.subarray(0, got)) >= 0) break;
    }
    return { ok: buf.subarray(0, got), size: st.size };
  } catch (err) {
    return readFailure(path, err);
  } finally {
    if (fd !== undefined) await close(fd).catch(() => undefined);
  }
}

/** A file's first bytes to the end of its header block (see {@link readHeaderStart}), or why they cannot be read. */
export type HeadRead = { header: Buffer; runsOn: boolean; size: number } | Exclude<Read, { ok: Buffer }>;

/**
 * A file's first bytes, to `cap`, cut after the empty line that ends its header block, and
 * whether the block runs on past them (no empty line among them, and the file is longer); or why
 * they cannot be read (as {@link readFileStart}).
 */
export async function readHeaderStart(path: string | Buffer, cap: number): Promise<HeadRead> {
  const head = await readFileStart(path, cap, true);
  if (!('ok' in head)) return head;
  return headOf(head.ok, head.size, headerEnd(head.ok, cap));
}

/** The bytes read `ok` of a file of `size` bytes cut at `end`, the end of its header block (-1: not among them). */
export function headOf(ok: Buffer, size: number, end: number): Extract<HeadRead, { header: Buffer }> {
  return { header: end < 0 ? ok : ok.subarray(0, end), runsOn: end < 0 && size > ok.length, size };
}

/**
 * What an error of opening or reading one file means: `gone` (ENOENT: moved or deleted since the
 * listing), `skip` (ELOOP, EISDIR, ENXIO: a symlink, directory or FIFO swapped in), else
 * `unreadable` (EACCES/EPERM `permission`, others `io`).
 * @throws MailboxError io on a process-wide shortage (EMFILE…)
 */
export function readFailure(path: string | Buffer, err: unknown): Exclude<Read, { ok: Buffer }> {
  const code = (err as NodeJS.ErrnoException).code ?? '';
  if (code === 'ENOENT') return { gone: true };
  if (code === 'ELOOP' || code === 'EISDIR' || code === 'ENXIO') return { skip: true };
  if (TRANSIENT_CODES.has(code)) throw ioError(`cannot read ${shownPath(path)}`, err);
  const reason: UnreadableReason = code === 'EACCES' || code === 'EPERM' ? 'permission' : 'io';
  return { unreadable: reason, detail: `${shownPath(path)}: ${code || (err as Error).message}` };
}

function ioError(what: string, err: unknown): MailboxError {
  const code = (err as NodeJS.ErrnoException)?.code;
  return new MailboxError(`${what}${code ? ` (${code})` : ''}`, 'io', { cause: err });
}

/** The unique part of a Maildir file name: everything before the first `:` (the info, `:2,FS`). */
export function uniqueName(fileName: string): string {
  const i = fileName.indexOf(':');
  return i < 0 ? fileName : fileName.slice(0, i);
}

/**
 * The ledger source of a Maildir message: `maildir:<folder>:<key>`, the key being its listing's
 * ({@link listFolder}: the unique name, or `<unique name>/ino<inode>`, neither holding a `:`).
 */
export function maildirSource(folder: string, key: string): string {
  return `maildir:${folder}:${key}`;
}

/** Where a listed file is now (its `bytes` cleared when its name is UTF-8 again). */
export function placeOf(e: FileName): FileName {
  return { sub: e.sub, name: e.name, bytes: e.bytes };
}

/** A full listing at least this often, in ms, even when the directories' mtimes did not move. */
const MAILDIR_RELIST_MS = 60_000;
/** How old a directory mtime must be, against the listing, to be trusted unchanged, in ms (coarse timestamps). */
const MAILDIR_MTIME_SLACK_MS = 2000;

/**
 * Whether the last listing (`last`: the directories' mtimes then, and when it was taken, ms) still
 * holds at `now`, so a check needs no new one (the way Dovecot syncs a Maildir): neither
 * directory's mtime moved since it, the listing is less than a minute old, and it was taken at
 * least 2 s after the newest of those mtimes — a change within the file system's timestamp
 * granularity of an earlier one would leave the mtime as it was.
 */
export function listingHolds(last: (DirTimes & { at: number }) | null, dirs: DirTimes, now: number): boolean {
  if (!last || last.newM !== dirs.newM || last.curM !== dirs.curM) return false;
  if (now - last.at >= MAILDIR_RELIST_MS) return false;
  const newestMs = Number((dirs.newM ?? 0n) > (dirs.curM ?? 0n) ? dirs.newM : dirs.curM) / 1e6;
  return last.at - newestMs >= MAILDIR_MTIME_SLACK_MS;
}
