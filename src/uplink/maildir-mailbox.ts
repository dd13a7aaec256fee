/**
 * The Maildir mailbox: reads a local Maildir folder's `new/` and `cur/`
 * read-only. A person's MUA (or our demo) writes into the same folder, so nothing here renames a
 * file, moves it from `new/` to `cur/`, or changes a flag (flags live in the file name after
 * `:2,`); files are only listed, lstat'ed and read.
 *
 * Keyed on names, not times. A message is its *unique name*, the file name before the first `:`
 * (the `:2,<flags>` info suffix, Maildir spec), so a message a MUA moves from `new/` to `cur/` or
 * re-flags stays the same message; its source key is `maildir:<folder path>:<unique name>`. Each
 * check lists both directories and hands out every unique name the caller has not recorded
 * (`req.isRecorded`), whatever the file's mtime: a sync tool that keeps an old mtime (a `rename`,
 * OfflineIMAP's `utime_from_header`) or a forged future date hides nothing. Only names not seen
 * before are opened: names recorded, names whose header block did not match the narrowing, and
 * entries that are not regular files are remembered in memory and not touched again. Per check the
 * cost is a stat of each directory — a listing only when one changed (its mtime moved), and at
 * least once a minute — plus at most {@link MAILDIR_HEADER_READS_PER_CHECK} header reads (after a
 * restart the narrowing misses are learnt again over several checks; `more` says so). Files are taken oldest first by (mtime, unique name); a returned uid is the mtime in ms,
 * clamped to now, and the watermark built from it is for information only.
 *
 * One bad entry never stops the mailbox: a symlink, FIFO, socket or directory is not mail and is
 * skipped, and a file that cannot be opened (EACCES) or vanishes after its header block matched is
 * returned with `unreadable` set, so the caller records it and goes on. Only a folder that cannot be listed, or a process-wide shortage
 * (EMFILE…), fails the check.
 *
 * UIDVALIDITY: the folder directory's birth time in ns, in decimal (the inode number on file
 * systems that report no birth time). It stays the same for the life of the folder and changes
 * when the folder is replaced (deleted and created again, or another directory moved into its
 * place); then what this reader remembers is dropped and the folder is read again (the ledger
 * dedupes). Not the inode alone: ext4 and tmpfs hand a freshly deleted directory's inode number to
 * the next mkdir.
 */
import { constants as fsConstants, type Dirent } from 'node:fs';
import { lstat, open, readdir, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { MailboxError, type CheckRequest, type CheckResult, type FetchedMessage, type Mailbox, type UnreadableReason } from './mailbox.js';
import { headerBlock, matches } from './maildir-narrowing.js';

export { deliverToMaildir } from './maildir-deliver.js';

/** Bytes read from the start of a file to find its header block (narrowing, and `tooLarge` messages). */
export const MAILDIR_HEADER_CAP_BYTES = 256 * 1024;
/** Header blocks read per check at most (files not seen before); the rest wait, with `more` set. */
export const MAILDIR_HEADER_READS_PER_CHECK = 2000;
/** Entries looked up or lstat'ed between two yields to the event loop. */
const YIELD_EVERY = 1000;
/** A full listing at least this often, in ms, even when the directories' mtimes did not move. */
const MAILDIR_RELIST_MS = 60_000;
/** How old a directory mtime must be, against the listing, to be trusted unchanged, in ms (coarse timestamps). */
const MAILDIR_MTIME_SLACK_MS = 2000;
/** Errors that say nothing about one file but about the process or the system: the check fails and is retried. */
const TRANSIENT_CODES = new Set(['EMFILE', 'ENFILE', 'ENOMEM', 'EAGAIN', 'EBUSY', 'EINTR', 'ETIMEDOUT']);
/** Open flags: never follow a symlink swapped in after the lstat; never block on a FIFO. */
const OPEN_FLAGS = fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK;

type Sub = 'new' | 'cur';

/** A unique name not yet settled: where it is, and (once lstat'ed) its mtime and size. */
interface Pending {
  sub: Sub;
  name: string;
  mtimeMs?: number;
  size?: number;
  /** isRecorded was asked since the name was last handed out. */
  asked: boolean;
}

/** A file chosen for this check: its header block matched the narrowing, or it could not be read at all. */
interface Chosen {
  unique: string;
  p: Pending;
  header: Buffer;
  unreadable?: FetchedMessage['unreadable'];
}

/** A read of one file: its first bytes and its size now, or why not. */
type Read = { ok: Buffer; size: number } | { gone: true } | { skip: true } | { unreadable: UnreadableReason; detail: string };

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A Maildir folder (the directory holding `cur/`, `new/` and `tmp/`), read without changing anything. */
export class MaildirMailbox implements Mailbox {
  readonly kind = 'maildir' as const;
  /** The folder path, as given; the key of this folder in `mailbox_state` and in source keys. */
  readonly folder: string;
  /** Unique names not settled yet (new to this process, or handed out and not yet recorded). */
  readonly #pending = new Map<string, Pending>();
  /** Unique names the ledger holds: never opened again. */
  readonly #recorded = new Set<string>();
  /** Unique names whose header block did not match `#missesFor`: the person's other mail, never opened again. */
  readonly #misses = new Set<string>();
  #missesFor = '';
  /** Unique names that are not regular files (symlink, FIFO, socket, directory). */
  readonly #skipped = new Set<string>();
  /** The UIDVALIDITY all the above belongs to. */
  #uidValidity: string | null = null;
  /** The pending entries oldest first, as the last check sorted them (see #candidates). */
  #order: [string, Pending][] | null = null;
  /** The directories' mtimes when the last listing was taken, and when (ms): see #unchangedSinceListing. */
  #listed: { newM: bigint | null; curM: bigint | null; at: number } | null = null;

  readonly #afterHeaderRead: ((file: string) => void | Promise<void>) | undefined;

  /**
   * @param dir the Maildir folder
   * @param o.afterHeaderRead called with a file's path after its header block was read and before
   *   it is read whole (a test uses it to delete a file mid-read)
   */
  constructor(dir: string, o: { afterHeaderRead?: (file: string) => void | Promise<void> } = {}) {
    this.folder = dir;
    this.#afterHeaderRead = o.afterHeaderRead;
  }

  /**
   * One read-only pass (see the file comment).
   * @throws MailboxError kind `io` when the folder is missing, is not a Maildir, cannot be listed,
   *   or the process is out of file descriptors or memory.
   */
  async check(req: CheckRequest): Promise<CheckResult> {
    const uidValidity = await this.#readUidValidity();
    if (this.#uidValidity !== uidValidity) {
      this.#forget();
      this.#uidValidity = uidValidity;
    }
    const wm = req.watermark;
    const uidValidityChanged = wm.uidValidity !== null && wm.uidValidity !== uidValidity;
    const result: CheckResult = { uidValidity, uidValidityChanged, messages: [], more: false, bytesFetched: 0 };

    const narrowing = req.fromAddresses.length > 0 || req.subjectContains.length > 0;
    const criteria = JSON.stringify([req.fromAddresses, req.subjectContains]);
    let relist = false;
    if (criteria !== this.#missesFor) {
      this.#misses.clear(); // other narrowing, other misses: listed again below
      this.#missesFor = criteria;
      relist = true;
    }
    const dirs = await this.#dirTimes();
    if (!narrowing) return result; // nothing to narrow on means nothing may be read
    if (relist || !this.#unchangedSinceListing(dirs)) {
      await this.#refresh(await this.#list());
      this.#listed = { ...dirs, at: Date.now() };
    }
    await this.#settleRecorded(req);
    const candidates = await this.#candidates();

    const limit = Math.max(0, req.maxFetch);
    const chosen: Chosen[] = [];
    const moved: [string, Pending][] = [];
    let reads = 0;
    for (const [unique, p] of candidates) {
      if (reads === MAILDIR_HEADER_READS_PER_CHECK) {
        result.more = true; // not known: the rest are read on the next check
        break;
      }
      reads++;
      const seen = await this.#examine(unique, p, req);
      if (seen === 'gone') moved.push([unique, p]);
      if (typeof seen === 'string') continue;
      if (chosen.length === limit) {
        result.more = true; // one more is known to wait; it stays pending
        break;
      }
      chosen.push(seen);
    }

    const lost: Chosen[] = [];
    for (const c of chosen) this.#handOut(c.unreadable ? this.#message(c, req.maxMessageBytes, c.header, c.unreadable) : await this.#whole(c, req.maxMessageBytes), c, lost, result);
    if (moved.length || lost.length) await this.#followMoves(moved, lost, limit - chosen.length, req, result);
    result.messages.sort((a, b) => a.uid - b.uid || (a.source < b.source ? -1 : a.source > b.source ? 1 : 0));
    return result;
  }

  /** Reads a pending file's header block and judges it by the narrowing: a match (or an unreadable file) to hand out, or why not. */
  async #examine(unique: string, p: Pending, req: CheckRequest): Promise<Chosen | 'gone' | 'skip' | 'miss'> {
    const head = await this.#read(p, MAILDIR_HEADER_CAP_BYTES);
    if ('gone' in head) return 'gone'; // moved or deleted since the listing
    if ('skip' in head) {
      this.#settle(unique, this.#skipped);
      return 'skip';
    }
    if ('unreadable' in head) return { unique, p, header: Buffer.alloc(0), unreadable: { reason: head.unreadable, detail: head.detail } };
    const header = headerBlock(head.ok);
    if (!matches(header, req)) {
      this.#settle(unique, this.#misses);
      return 'miss';
    }
    await this.#afterHeaderRead?.(join(this.folder, p.sub, p.name));
    return { unique, p, header };
  }

  /** Adds a message to the result (or notes a file gone since its header block was read). */
  #handOut(msg: FetchedMessage | 'gone' | 'skip', c: Chosen, lost: Chosen[], result: CheckResult): void {
    if (msg === 'gone') lost.push(c);
    if (typeof msg === 'string') return;
    c.p.asked = false; // handed out: ask isRecorded again next time
    result.bytesFetched += msg.raw.length;
    result.messages.push(msg);
  }

  /**
   * Files gone when read: a MUA may have moved them from new/ to cur/ or re-flagged them since the
   * listing. One fresh listing finds them, and each is read once more from where it is now (up to
   * `room` new matches). A file that matched and is in neither directory any more was deleted: it
   * is returned as `unreadable: vanished`, with the header block read. A file gone twice waits for
   * the next check (`more`).
   */
  async #followMoves(moved: [string, Pending][], lost: Chosen[], room: number, req: CheckRequest, result: CheckResult): Promise<void> {
    const listing = await this.#list();
    const relocate = (unique: string, p: Pending): boolean => {
      const now = listing.get(unique);
      if (now) Object.assign(p, { sub: now.sub, name: now.name });
      return now !== undefined;
    };
    const again: Chosen[] = [];
    for (const c of lost) {
      if (relocate(c.unique, c.p)) again.push(c);
      else this.#handOut(this.#message(c, req.maxMessageBytes, c.header, { reason: 'vanished', detail: `${join(this.folder, c.p.sub, c.p.name)} was deleted after its header block was read` }), c, [], result);
    }
    for (const [unique, p] of moved) {
      if (!relocate(unique, p)) {
        this.#pending.delete(unique); // deleted before anything was read: it is not in the folder
        continue;
      }
      const seen = await this.#examine(unique, p, req);
      if (seen === 'gone') result.more = true;
      if (typeof seen === 'string') continue;
      if (room-- <= 0) {
        result.more = true;
        break;
      }
      again.push(seen);
    }
    const gone: Chosen[] = [];
    for (const c of again) this.#handOut(c.unreadable ? this.#message(c, req.maxMessageBytes, c.header, c.unreadable) : await this.#whole(c, req.maxMessageBytes), c, gone, result);
    if (gone.length) result.more = true;
  }

  /** Holds nothing open; a no-op kept for the interface. */
  async close(): Promise<void> {}

  #source(unique: string): string {
    return `maildir:${this.folder}:${unique}`;
  }

  #forget(): void {
    this.#listed = null;
    this.#order = null;
    this.#pending.clear();
    this.#recorded.clear();
    this.#misses.clear();
    this.#skipped.clear();
  }

  #settle(unique: string, into: Set<string>): void {
    this.#pending.delete(unique);
    into.add(unique);
  }

  /**
   * The message handed out for a chosen entry, with `raw` as given (the header block only when the
   * message is over `maxBytes`). A future mtime (clock skew, a sync tool that copies the Date
   * header) gives a uid of now.
   */
  #message(c: Chosen, maxBytes: number, raw: Buffer, unreadable?: FetchedMessage['unreadable']): FetchedMessage {
    const uid = Math.min(c.p.mtimeMs ?? 0, Date.now());
    const size = c.p.size ?? raw.length;
    const tooLarge = !unreadable && size > maxBytes;
    return { uid, source: this.#source(c.unique), raw, size, tooLarge, receivedAt: uid, ...(unreadable ? { unreadable } : {}) };
  }

  /** Reads a matched message whole (or keeps its header block when over `maxBytes`); `gone` or `skip` when it cannot be. */
  async #whole(c: Chosen, maxBytes: number): Promise<FetchedMessage | 'gone' | 'skip'> {
    if ((c.p.size ?? 0) > maxBytes) return this.#message(c, maxBytes, c.header);
    const whole = await this.#read(c.p, maxBytes + 1);
    if ('gone' in whole) return 'gone';
    if ('skip' in whole) {
      this.#settle(c.unique, this.#skipped);
      return 'skip';
    }
    if ('unreadable' in whole) return this.#message(c, maxBytes, c.header, { reason: whole.unreadable, detail: whole.detail });
    c.p.size = whole.size; // a file rewritten since the lstat is judged by what it holds now
    return this.#message(c, maxBytes, whole.size > maxBytes ? c.header : whole.ok);
  }

  async #readUidValidity(): Promise<string> {
    try {
      const s = await stat(this.folder, { bigint: true });
      if (!s.isDirectory()) throw new MailboxError(`Maildir ${this.folder} is not a directory`, 'io');
      return (s.birthtimeNs > 0n ? s.birthtimeNs : s.ino).toString(10);
    } catch (err) {
      if (err instanceof MailboxError) throw err;
      throw ioError(`cannot read the Maildir ${this.folder}`, err);
    }
  }

  /** Every entry of new/ then cur/ by unique name (a name in both, mid-move, is taken from cur/). */
  async #list(): Promise<Map<string, { sub: Sub; name: string; dirent: Dirent }>> {
    const out = new Map<string, { sub: Sub; name: string; dirent: Dirent }>();
    let found = 0;
    for (const sub of ['new', 'cur'] as const) {
      let dirents: Dirent[];
      try {
        dirents = await readdir(join(this.folder, sub), { withFileTypes: true });
        found++;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw ioError(`cannot list ${join(this.folder, sub)}`, err);
      }
      for (const d of dirents) if (!d.name.startsWith('.')) out.set(uniqueName(d.name), { sub, name: d.name, dirent: d });
    }
    if (found === 0) throw new MailboxError(`${this.folder} is not a Maildir: it has neither new/ nor cur/`, 'io');
    return out;
  }

  /**
   * The modification times (ns) of new/ and cur/, read before any listing: a file added, removed
   * or renamed changes its directory's mtime.
   * @throws MailboxError io when neither exists (not a Maildir) or one cannot be stat'ed
   */
  async #dirTimes(): Promise<{ newM: bigint | null; curM: bigint | null }> {
    const time = async (sub: Sub): Promise<bigint | null> => {
      try {
        return (await stat(join(this.folder, sub), { bigint: true })).mtimeNs;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw ioError(`cannot stat ${join(this.folder, sub)}`, err);
      }
    };
    const [newM, curM] = await Promise.all([time('new'), time('cur')]);
    if (newM === null && curM === null) throw new MailboxError(`${this.folder} is not a Maildir: it has neither new/ nor cur/`, 'io');
    return { newM, curM };
  }

  /**
   * Whether the last listing still holds, so this check needs no new one (the way Dovecot syncs a
   * Maildir): neither directory's mtime moved since it, the listing is less than a minute old, and
   * it was taken at least 2 s after the newest of those mtimes — a change within the file system's
   * timestamp granularity of an earlier one would leave the mtime as it was.
   */
  #unchangedSinceListing(dirs: { newM: bigint | null; curM: bigint | null }): boolean {
    const last = this.#listed;
    if (!last || last.newM !== dirs.newM || last.curM !== dirs.curM) return false;
    const now = Date.now();
    if (now - last.at >= MAILDIR_RELIST_MS) return false;
    const newestMs = Number((dirs.newM ?? 0n) > (dirs.curM ?? 0n) ? dirs.newM : dirs.curM) / 1e6;
    return last.at - newestMs >= MAILDIR_MTIME_SLACK_MS;
  }

  /** Brings the remembered names in line with a listing: gone names are dropped, new ones become pending. */
  async #refresh(listing: Map<string, { sub: Sub; name: string; dirent: Dirent }>): Promise<void> {
    let n = 0;
    const breathe = async (): Promise<void> => {
      if (++n % YIELD_EVERY === 0) await yieldToLoop(); // 100,000 names: let the event loop run between slices
    };
    for (const set of [this.#recorded, this.#misses, this.#skipped]) {
      for (const u of set) {
        if (!listing.has(u)) set.delete(u);
        await breathe();
      }
    }
    for (const u of this.#pending.keys()) if (!listing.has(u)) this.#pending.delete(u);
    for (const [u, e] of listing) {
      await breathe();
      if (this.#recorded.has(u) || this.#misses.has(u) || this.#skipped.has(u)) continue;
      // The directory entry's type is free with the listing (d_type); DT_UNKNOWN is settled by the lstat below.
      if (e.dirent.isSymbolicLink() || e.dirent.isFIFO() || e.dirent.isDirectory() || e.dirent.isSocket() || e.dirent.isBlockDevice() || e.dirent.isCharacterDevice()) {
        this.#settle(u, this.#skipped);
        continue;
      }
      const p = this.#pending.get(u);
      if (!p) this.#pending.set(u, { sub: e.sub, name: e.name, asked: false });
      else if (p.sub !== e.sub || p.name !== e.name) Object.assign(p, { sub: e.sub, name: e.name }); // moved or re-flagged: same message
    }
  }

  /** Asks the caller about every pending name not asked yet; the recorded ones are settled. */
  async #settleRecorded(req: CheckRequest): Promise<void> {
    if (!req.isRecorded) return;
    let n = 0;
    for (const [u, p] of this.#pending) {
      if (p.asked) continue;
      p.asked = true;
      if (req.isRecorded(this.#source(u))) this.#settle(u, this.#recorded);
      if (++n % YIELD_EVERY === 0) await yieldToLoop(); // a first check after a restart may ask 100,000 times
    }
  }

  /** The pending entries, lstat'ed once each, oldest first by (mtime, unique name). */
  async #candidates(): Promise<[string, Pending][]> {
    const unstated = [...this.#pending].filter(([, p]) => p.mtimeMs === undefined);
    const gone: [string, Pending][] = [];
    // 32 at a time on the thread pool; each batch's await lets the event loop run.
    for (let i = 0; i < unstated.length; i += 32) {
      const batch = unstated.slice(i, i + 32);
      const outcomes = await Promise.all(batch.map(([u, p]) => this.#lstat(u, p)));
      outcomes.forEach((o, k) => o === 'gone' && gone.push(batch[k]!));
    }
    if (gone.length) {
      // Moved (new/ → cur/, a flag) or deleted since the listing: one more listing says which.
      const listing = await this.#list();
      for (const [u, p] of gone) {
        const now = listing.get(u);
        if (!now) this.#pending.delete(u);
        else if (now.sub !== p.sub || now.name !== p.name) await this.#lstat(u, Object.assign(p, { sub: now.sub, name: now.name }));
      }
    }
    // The order is kept between checks while no entry got its first lstat (after a restart 100,000
    // names are worked through 2,000 a check: sorting them on every check stalled the event loop).
    if (unstated.length > 0 || gone.length > 0 || !this.#order) {
      this.#order = [...this.#pending]
        .filter(([, p]) => p.mtimeMs !== undefined)
        .sort(([ua, a], [ub, b]) => a.mtimeMs! - b.mtimeMs! || (ua < ub ? -1 : ua > ub ? 1 : 0));
    }
    // Settled names drop out of the kept order for good.
    const order = this.#order.filter(([u, p]) => this.#pending.get(u) === p);
    this.#order = order;
    return order;
  }

  /** Fills in a pending entry's mtime and size; `gone` when the name is no longer there. */
  async #lstat(unique: string, p: Pending): Promise<'gone' | void> {
    try {
      const s = await lstat(join(this.folder, p.sub, p.name));
      if (!s.isFile()) this.#settle(unique, this.#skipped);
      else Object.assign(p, { mtimeMs: Math.floor(s.mtimeMs), size: s.size });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (TRANSIENT_CODES.has(code)) throw ioError(`cannot lstat ${join(this.folder, p.sub, p.name)}`, err);
      if (code === 'ENOENT') return 'gone';
      // Not lstat-able otherwise (EACCES on the directory…): tried again next check.
    }
  }

  /**
   * Reads up to `cap` bytes from the start of a pending file: opened with O_NOFOLLOW and
   * O_NONBLOCK and checked with fstat, so a symlink or FIFO swapped in after the lstat is skipped.
   */
  async #read(p: Pending, cap: number): Promise<Read> {
    const path = join(this.folder, p.sub, p.name);
    let fh: FileHandle | undefined;
    try {
      fh = await open(path, OPEN_FLAGS);
      const st = await fh.stat();
      if (!st.isFile()) return { skip: true };
      const buf = Buffer.alloc(Math.min(cap, st.size));
      let got = 0;
      while (got < buf.length) {
        const { bytesRead } = await fh.read(buf, got, buf.length - got, got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      return { ok: buf.subarray(0, got), size: st.size };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (code === 'ENOENT') return { gone: true };
      if (code === 'ELOOP' || code === 'EISDIR' || code === 'ENXIO') return { skip: true };
      if (TRANSIENT_CODES.has(code)) throw ioError(`cannot read ${path}`, err);
      const reason: UnreadableReason = code === 'EACCES' || code === 'EPERM' ? 'permission' : 'io';
      return { unreadable: reason, detail: `${path}: ${code || (err as Error).message}` };
    } finally {
      await fh?.close().catch(() => undefined);
    }
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
