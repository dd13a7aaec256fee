/**
 * The Maildir mailbox: reads a local Maildir folder's `new/` and `cur/` read-only. A person's MUA
 * (or our demo) writes into the same folder, so nothing here renames a file, moves it from `new/`
 * to `cur/`, or changes a flag (flags live in the file name after
 * `:2,`); files are only listed, stat'ed and read.
 *
 * Maildir has no UIDs. Messages are ordered by (mtime in ms, unique name); a message's "uid" is its
 * mtime in ms, and the watermark's `lastUid` is the mtime of the newest message handed out. Because
 * file-system clocks are coarse (1 s or 2 s on some file systems) and two deliveries can share an
 * mtime, each check looks at every file with mtime ≥ lastUid − 2000 ms and skips those whose
 * source the caller says are recorded (`req.isRecorded`). So, unlike IMAP, a returned uid may be
 * equal to or slightly below `lastUid`. A file delivered later with an mtime older than that window
 * (a copy that keeps an old mtime) is not seen.
 *
 * The source key is `maildir:<folder path>:<unique name>`, the unique name being the file name
 * before the first `:` (the `:2,<flags>` info suffix, Maildir spec), so a message a MUA moves from
 * `new/` to `cur/` or re-flags keeps its key (a rename keeps the mtime too).
 *
 * UIDVALIDITY: the folder directory's birth time in ns, in decimal (the inode number on file
 * systems that report no birth time). It stays the same for the life of the folder and changes
 * when the folder is replaced (deleted and created again, or another directory moved into its
 * place); then the whole folder is rescanned and the ledger dedupes. Not the inode alone: ext4
 * and tmpfs hand a freshly deleted directory's inode number to the next mkdir.
 */
import { constants as fsConstants, type Dirent } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import libmime from 'libmime';
import { MailboxError, type CheckRequest, type CheckResult, type FetchedMessage, type Mailbox } from './mailbox.js';

/** Bytes read from the start of a file to find its header block (narrowing, and `tooLarge` messages). */
export const MAILDIR_HEADER_CAP_BYTES = 256 * 1024;
/** How far below the watermark's mtime a check still looks, in ms (coarse file-system clocks). */
export const MAILDIR_MTIME_SLACK_MS = 2000;

interface Entry {
  /** `new` or `cur`. */
  sub: string;
  name: string;
  unique: string;
  mtimeMs: number;
  size: number;
}

/** A Maildir folder (the directory holding `cur/`, `new/` and `tmp/`), read without changing anything. */
export class MaildirMailbox implements Mailbox {
  readonly kind = 'maildir' as const;
  /** The folder path, as given; the key of this folder in `mailbox_state` and in source keys. */
  readonly folder: string;
  /**
   * Files whose header block did not match, by unique name, with the mtime and size they had:
   * not read again while unchanged (a busy personal Maildir would otherwise be re-read on every
   * check until the agent's first reply moves the watermark).
   */
  readonly #misses = new Map<string, { mtimeMs: number; size: number }>();
  /** The narrowing the misses were judged by; other narrowing, other misses. */
  #missesFor = '';

  constructor(dir: string) {
    this.folder = dir;
  }

  /**
   * One read-only pass (see the file comment).
   * @throws MailboxError kind `io` when the folder is missing, is not a Maildir, or cannot be read.
   */
  async check(req: CheckRequest): Promise<CheckResult> {
    const uidValidity = await this.#uidValidity();
    const wm = req.watermark;
    const uidValidityChanged = wm.uidValidity !== null && wm.uidValidity !== uidValidity;
    const after = wm.uidValidity === uidValidity ? wm.lastUid : 0;
    const since = after > 0 ? after - MAILDIR_MTIME_SLACK_MS : -Infinity;
    const result: CheckResult = { uidValidity, uidValidityChanged, messages: [], more: false, bytesFetched: 0 };

    const listing = await this.#list();
    const seen = new Set(listing.map((e) => e.unique));
    for (const key of this.#misses.keys()) if (!seen.has(key)) this.#misses.delete(key);
    const narrowing = req.fromAddresses.length > 0 || req.subjectContains.length > 0;
    if (!narrowing) return result; // nothing to narrow on means nothing may be read
    const criteria = JSON.stringify([req.fromAddresses, req.subjectContains]);
    if (criteria !== this.#missesFor) {
      this.#misses.clear();
      this.#missesFor = criteria;
    }

    const candidates = listing
      .filter((e) => e.mtimeMs >= since)
      .filter((e) => !req.isRecorded?.(this.#source(e.unique)))
      .sort((a, b) => a.mtimeMs - b.mtimeMs || (a.unique < b.unique ? -1 : a.unique > b.unique ? 1 : 0));

    const limit = Math.max(0, req.maxFetch);
    const chosen: { entry: Entry; header: Buffer }[] = [];
    for (const e of candidates) {
      const miss = this.#misses.get(e.unique);
      if (miss && miss.mtimeMs === e.mtimeMs && miss.size === e.size) continue;
      const head = await this.#readHead(e);
      if (!head) continue; // vanished
      if (!matches(head.header, req)) {
        this.#misses.set(e.unique, { mtimeMs: e.mtimeMs, size: e.size });
        continue;
      }
      if (chosen.length === limit) {
        result.more = true;
        break;
      }
      chosen.push({ entry: head.entry, header: head.header });
    }

    for (const { entry, header } of chosen) {
      const tooLarge = entry.size > req.maxMessageBytes;
      let raw = header;
      if (!tooLarge) {
        const whole = await this.#readWhole(entry);
        if (!whole) continue; // vanished between the header read and now
        raw = whole.raw;
      }
      result.bytesFetched += raw.length;
      // A file with an mtime in the future (clock skew, a sync tool that copies the Date header)
      // must not carry the watermark past every later delivery: its uid is clamped to now.
      const uid = Math.min(entry.mtimeMs, Date.now());
      const msg: FetchedMessage = { uid, source: this.#source(entry.unique), raw, size: entry.size, tooLarge, receivedAt: uid };
      result.messages.push(msg);
    }
    return result;
  }

  /** Holds nothing open; a no-op kept for the interface. */
  async close(): Promise<void> {}

  #source(unique: string): string {
    return `maildir:${this.folder}:${unique}`;
  }

  async #uidValidity(): Promise<string> {
    try {
      const s = await stat(this.folder, { bigint: true });
      if (!s.isDirectory()) throw new MailboxError(`Maildir ${this.folder} is not a directory`, 'io');
      return (s.birthtimeNs > 0n ? s.birthtimeNs : s.ino).toString(10);
    } catch (err) {
      if (err instanceof MailboxError) throw err;
      throw ioError(`cannot read the Maildir ${this.folder}`, err);
    }
  }

  /** Every message file in new/ then cur/, stat'ed; one entry per unique name. */
  async #list(): Promise<Entry[]> {
    const out = new Map<string, Entry>();
    let found = 0;
    // new/ first: a message moved to cur/ between the two listings is then listed twice rather
    // than not at all (its new/ entry fails to stat and is dropped).
    for (const sub of ['new', 'cur']) {
      let dirents: Dirent[];
      try {
        dirents = await readdir(join(this.folder, sub), { withFileTypes: true });
        found++;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw ioError(`cannot list ${join(this.folder, sub)}`, err);
      }
      for (const d of dirents) {
        if (d.name.startsWith('.') || d.isDirectory()) continue;
        const unique = uniqueName(d.name);
        if (out.has(unique)) continue;
        const e = await this.#statEntry(sub, d.name);
        if (e) out.set(unique, e);
      }
    }
    if (found === 0) throw new MailboxError(`${this.folder} is not a Maildir: it has neither new/ nor cur/`, 'io');
    return [...out.values()];
  }

  async #statEntry(sub: string, name: string): Promise<Entry | null> {
    try {
      const s = await stat(join(this.folder, sub, name));
      if (!s.isFile()) return null;
      return { sub, name, unique: uniqueName(name), mtimeMs: Math.floor(s.mtimeMs), size: s.size };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw ioError(`cannot stat ${join(this.folder, sub, name)}`, err);
    }
  }

  /**
   * Where a message is now: a MUA may have moved it from new/ to cur/ or renamed it for a flag
   * since the listing. Null when it is gone.
   */
  async #relocate(e: Entry): Promise<Entry | null> {
    for (const sub of ['cur', 'new']) {
      let names: string[];
      try {
        names = await readdir(join(this.folder, sub));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw ioError(`cannot list ${join(this.folder, sub)}`, err);
      }
      const name = names.find((n) => uniqueName(n) === e.unique);
      if (name && !(sub === e.sub && name === e.name)) return this.#statEntry(sub, name);
    }
    return null;
  }

  /** Reads the header block (at most MAILDIR_HEADER_CAP_BYTES); follows one move; null when gone. */
  async #readHead(e: Entry): Promise<{ entry: Entry; header: Buffer } | null> {
    for (let entry: Entry | null = e, tries = 0; entry && tries < 2; tries++) {
      try {
        const fh = await open(join(this.folder, entry.sub, entry.name), fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
        try {
          const buf = Buffer.alloc(Math.min(MAILDIR_HEADER_CAP_BYTES, entry.size));
          const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
          return { entry, header: headerBlock(buf.subarray(0, bytesRead)) };
        } finally {
          await fh.close();
        }
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError(`cannot read ${join(this.folder, entry.sub, entry.name)}`, err);
        entry = await this.#relocate(entry);
      }
    }
    return null;
  }

  /** Reads the whole file; follows one move; null when gone. */
  async #readWhole(e: Entry): Promise<{ entry: Entry; raw: Buffer } | null> {
    for (let entry: Entry | null = e, tries = 0; entry && tries < 2; tries++) {
      try {
        return { entry, raw: await readFile(join(this.folder, entry.sub, entry.name), { flag: fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW }) };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError(`cannot read ${join(this.folder, entry.sub, entry.name)}`, err);
        entry = await this.#relocate(entry);
      }
    }
    return null;
  }
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

/** The header block: up to and including the first empty line (CRLF or LF), or all of `buf`. */
function headerBlock(buf: Buffer): Buffer {
  const crlf = buf.indexOf('\r\n\r\n');
  const lf = buf.indexOf('\n\n');
  const ends = [crlf >= 0 ? crlf + 4 : -1, lf >= 0 ? lf + 2 : -1].filter((i) => i >= 0);
  return ends.length ? buf.subarray(0, Math.min(...ends)) : buf;
}

/**
 * Unfolded header fields of a header block, names lower-cased, in order (duplicates kept).
 * RFC 5322 §2.2.3: a line starting with white space continues the previous field.
 */
function headerFields(header: Buffer): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [];
  for (const line of header.toString('latin1').split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && out.length) {
      out[out.length - 1]!.value += line;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    out.push({ name: line.slice(0, colon).trim().toLowerCase(), value: line.slice(colon + 1).trim() });
  }
  return out;
}

/**
 * The narrowing test, with IMAP SEARCH semantics (RFC 3501 §6.4.4: FROM and SUBJECT match a
 * case-insensitive substring): some From field contains one of `fromAddresses`, or some Subject,
 * decoded from RFC 2047 words (libmime), contains one of `subjectContains`. Every From and Subject
 * field counts, so a message with two of them still reaches the gates (which refuse it).
 */
function matches(header: Buffer, req: CheckRequest): boolean {
  const fields = headerFields(header);
  const utf8 = (v: string): string => Buffer.from(v, 'latin1').toString('utf8');
  const froms = fields.filter((f) => f.name === 'from').map((f) => decode(utf8(f.value)).toLowerCase());
  const subjects = fields.filter((f) => f.name === 'subject').map((f) => decode(utf8(f.value)).toLowerCase());
  const from = req.fromAddresses.map((a) => a.toLowerCase()).filter(Boolean);
  const subj = req.subjectContains.map((s) => s.toLowerCase()).filter(Boolean);
  return froms.some((v) => from.some((a) => v.includes(a))) || subjects.some((v) => subj.some((s) => v.includes(s)));
}

function decode(value: string): string {
  try {
    return libmime.decodeWords(value);
  } catch {
    return value;
  }
}

let deliveries = 0;

/**
 * Delivers one message into a Maildir the Maildir way: written and fsync'ed under `tmp/`, then
 * renamed into `new/` (so a reader never sees half a file). The name is
 * `<seconds>.M<microseconds>P<pid>Q<n>.<host>,S=<size>` (the Maildir convention; `/` and `:`
 * in the host name written as `\057` and `\072`). Creates `tmp/`, `new/` and `cur/` when missing.
 * File mode 0600.
 *
 * @param dir the Maildir folder (holding tmp/, new/, cur/)
 * @param raw the message bytes, kept exactly
 * @returns the path of the delivered file under `new/`
 * @throws the file-system error (e.g. EACCES) as is
 */
export async function deliverToMaildir(dir: string, raw: Buffer | string): Promise<string> {
  const bytes = typeof raw === 'string' ? Buffer.from(raw) : raw;
  for (const sub of ['tmp', 'new', 'cur']) await mkdir(join(dir, sub), { recursive: true, mode: 0o700 });
  const micros = BigInt(Math.floor((performance.timeOrigin + performance.now()) * 1000));
  const seconds = micros / 1_000_000n;
  const host = hostname().replace(/\//g, '\\057').replace(/:/g, '\\072') || 'localhost';
  const usec = String(micros % 1_000_000n).padStart(6, '0'); // padded: names sort in delivery order
  const name = `${seconds}.M${usec}P${process.pid}Q${++deliveries}.${host},S=${bytes.length}`;
  const tmpPath = join(dir, 'tmp', name);
  const newPath = join(dir, 'new', name);
  const fh = await open(tmpPath, 'wx', 0o600);
  try {
    await fh.writeFile(bytes);
    await fh.sync();
  } catch (err) {
    await fh.close().catch(() => undefined);
    await unlink(tmpPath).catch(() => undefined);
    throw err;
  }
  await fh.close();
  await rename(tmpPath, newPath);
  return newPath;
}
