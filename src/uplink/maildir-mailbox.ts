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
 * entries that are not regular files are remembered in memory and not touched again. Per pass the
 * cost is a stat of each directory — a listing only when one changed (its mtime moved), and at
 * least once a minute — plus at most `req.maxHeaders` header reads, each of the header block only
 * (after a restart the narrowing misses are learnt again over several passes; `more` says so),
 * plus the whole messages the caller asks for. Files are taken oldest first by (mtime, unique
 * name); a uid is the mtime in ms, clamped to now, and the watermark built from it is for
 * information only.
 *
 * Every file that may be mail leaves a trace: one whose header block runs past
 * {@link MAILDIR_HEADER_CAP_BYTES} is handed out whatever the narrowing (which cannot read it), for
 * the gates to record as `too-large-header`; the narrowing reads CR-only line ends as line ends.
 * One bad entry never stops the mailbox: a symlink, FIFO, socket or directory is not mail and is
 * skipped, and a file that cannot be opened (EACCES) or vanishes after its header block matched is
 * handed out with `unreadable` set, so the caller records it and goes on. Only a folder that cannot
 * be listed, or a process-wide shortage (EMFILE…), fails the pass.
 *
 * UIDVALIDITY: see `readUidValidity` in maildir-files.ts; when it changes, what this reader
 * remembers is dropped and the folder is read again (the ledger dedupes).
 */
import { MAX_HEADER_BLOCK_BYTES } from './gates.js';
import {
  DEFAULT_MAX_HEADERS,
  HEADER_BATCH,
  readOldest,
  unreadableMessage,
  type CheckRequest,
  type CheckResult,
  type FetchedMessage,
  type HeaderedMessage,
  type Mailbox,
  type MailboxPass,
} from './mailbox.js';
import { dirTimes, listFolder, listingHolds, lstatEntry, pathOf, placeOf, readFileStart, readUidValidity, shownPath, type FileName, type ListedEntry } from './maildir-files.js';
import { matches } from './maildir-narrowing.js';
import { headerEnd } from './raw-headers.js';

export { deliverToMaildir } from './maildir-deliver.js';
export { uniqueName } from './maildir-files.js';

/** Bytes read from the start of a file at most to find its header block: the longest the gates read (`MAX_HEADER_BLOCK_BYTES`). */
export const MAILDIR_HEADER_CAP_BYTES = MAX_HEADER_BLOCK_BYTES;
/** Entries looked up or lstat'ed between two yields to the event loop. */
const YIELD_EVERY = 1000;

/** A unique name not yet settled: where it is, and (once lstat'ed) its mtime and size. */
interface Pending extends FileName {
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
  /** The directories' mtimes when the last listing was taken, and when (ms): see listingHolds (maildir-files.ts). */
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
   * Opens one read-only pass (see the file comment): the folder's UIDVALIDITY, a listing when one
   * is due, and the names not recorded, oldest first. Header blocks are read by `headers()`, at
   * most `req.maxHeaders` files per pass; whole messages by `whole()`.
   * @throws MailboxError kind `io` when the folder is missing, is not a Maildir, cannot be listed,
   *   or the process is out of file descriptors or memory.
   */
  async open(req: CheckRequest): Promise<MailboxPass> {
    const uidValidity = await readUidValidity(this.folder);
    if (this.#uidValidity !== uidValidity) {
      this.#forget();
      this.#uidValidity = uidValidity;
    }
    const wm = req.watermark;
    const narrowing = req.fromAddresses.length > 0 || req.subjectContains.length > 0;
    const criteria = JSON.stringify([req.fromAddresses, req.subjectContains]);
    let relist = false;
    if (criteria !== this.#missesFor) {
      this.#misses.clear(); // other narrowing, other misses: listed again below
      this.#missesFor = criteria;
      relist = true;
    }
    const dirs = await dirTimes(this.folder);
    let candidates: [string, Pending][] = [];
    // Nothing to narrow on means nothing may be read.
    if (narrowing) {
      if (relist || !listingHolds(this.#listed, dirs, Date.now())) {
        await this.#refresh(await listFolder(this.folder));
        this.#listed = { ...dirs, at: Date.now() };
      }
      await this.#settleRecorded(req);
      candidates = await this.#candidates();
    }
    const budget = Math.max(0, req.maxHeaders ?? DEFAULT_MAX_HEADERS);
    /** Handed out by headers(), by source: what whole() reads. */
    const handed = new Map<string, Chosen>();
    let cursor = 0;
    let reads = 0;
    let bytes = 0;
    /** Something waits that this pass did not hand out although it was read (a file gone twice). */
    let waiting = false;
    const headered = (c: Chosen): HeaderedMessage => {
      const m = this.#message(c, req.maxMessageBytes, c.header, c.unreadable);
      handed.set(m.source, c);
      c.p.asked = false; // handed out: ask isRecorded again next time
      bytes += c.header.length;
      return { uid: m.uid, source: m.source, head: c.header, size: m.size, receivedAt: m.receivedAt, passes: m.uid, ...(c.unreadable ? { unreadable: c.unreadable } : {}) };
    };
    return {
      uidValidity,
      uidValidityChanged: wm.uidValidity !== null && wm.uidValidity !== uidValidity,
      floor: wm.uidValidity === uidValidity ? wm.lastUid : 0,
      get more() {
        return waiting || cursor < candidates.length;
      },
      get bytesFetched() {
        return bytes;
      },
      headers: async () => {
        const out: HeaderedMessage[] = [];
        const moved: [string, Pending][] = [];
        while (cursor < candidates.length && out.length < HEADER_BATCH && reads < budget) {
          const [unique, p] = candidates[cursor++]!;
          if (this.#pending.get(unique) !== p) continue; // settled since the pass opened
          reads++;
          const seen = await this.#examine(unique, p, req);
          if (seen === 'gone') moved.push([unique, p]);
          else if (typeof seen !== 'string') out.push(headered(seen));
        }
        if (moved.length) {
          // Moved (new/ → cur/, a flag) or deleted since the listing: one fresh listing says which.
          const listing = await listFolder(this.folder);
          for (const [unique, p] of moved) {
            const now = listing.get(unique);
            if (!now) {
              this.#pending.delete(unique); // deleted before anything was read: it is not in the folder
              continue;
            }
            Object.assign(p, placeOf(now));
            const seen = await this.#examine(unique, p, req);
            if (seen === 'gone') waiting = true; // moved again: the next pass reads it
            else if (typeof seen !== 'string') out.push(headered(seen));
          }
        }
        return out.sort((x, y) => x.uid - y.uid || (x.source < y.source ? -1 : x.source > y.source ? 1 : 0));
      },
      whole: async (messages) => {
        const out = new Map<string, FetchedMessage>();
        const lost: [HeaderedMessage, Chosen][] = [];
        const vanished = (h: HeaderedMessage, c: Chosen): FetchedMessage =>
          unreadableMessage(h, { reason: 'vanished', detail: `${shownPath(pathOf(this.folder, c.p))} was deleted after its header block was read` });
        const read = async (h: HeaderedMessage, c: Chosen): Promise<FetchedMessage | 'gone'> => {
          const m = await this.#whole(c, req.maxMessageBytes);
          if (m === 'skip') return vanished(h, c); // no longer a regular file
          if (m !== 'gone' && m.raw !== c.header) bytes += m.raw.length;
          return m;
        };
        for (const h of messages) {
          const c = handed.get(h.source);
          if (!c) throw new Error(`${h.source} was not handed out by this pass`);
          if (h.unreadable) {
            out.set(h.source, unreadableMessage(h, h.unreadable));
            continue;
          }
          await this.#afterHeaderRead?.(shownPath(pathOf(this.folder, c.p)));
          const m = await read(h, c);
          if (m === 'gone') lost.push([h, c]);
          else out.set(h.source, m);
        }
        if (lost.length) {
          // A MUA may have moved them from new/ to cur/ or re-flagged them since: one fresh listing
          // finds them, and each is read once more from where it is now; one in neither directory
          // any more was deleted.
          const listing = await listFolder(this.folder);
          for (const [h, c] of lost) {
            const now = listing.get(c.unique);
            if (now) Object.assign(c.p, placeOf(now));
            const m = now ? await read(h, c) : 'gone';
            out.set(h.source, m === 'gone' ? vanished(h, c) : m);
          }
        }
        return messages.map((h) => out.get(h.source)!);
      },
      close: () => Promise.resolve(),
    };
  }

  /** One pass handing out the oldest `req.maxFetch` candidates whole (mailbox.ts `readOldest`). */
  check(req: CheckRequest): Promise<CheckResult> {
    return readOldest(this, req);
  }

  /**
   * Reads a pending file's header block and judges it by the narrowing: a match (or an unreadable
   * file, or one whose header block runs past {@link MAILDIR_HEADER_CAP_BYTES}, which the narrowing
   * cannot judge: the gates record it as `too-large-header`) to hand out, or why not.
   */
  async #examine(unique: string, p: Pending, req: CheckRequest): Promise<Chosen | 'gone' | 'skip' | 'miss'> {
    const head = await readFileStart(pathOf(this.folder, p), MAILDIR_HEADER_CAP_BYTES, true);
    if ('gone' in head) return 'gone'; // moved or deleted since the listing
    if ('skip' in head) {
      this.#settle(unique, this.#skipped);
      return 'skip';
    }
    if ('unreadable' in head) return { unique, p, header: Buffer.alloc(0), unreadable: { reason: head.unreadable, detail: head.detail } };
    p.size = head.size;
    const end = headerEnd(head.ok, MAILDIR_HEADER_CAP_BYTES);
    const header = end < 0 ? head.ok : head.ok.subarray(0, end);
    const runsOn = end < 0 && head.size > head.ok.length;
    if (!runsOn && !matches(header, req)) {
      this.#settle(unique, this.#misses);
      return 'miss';
    }
    return { unique, p, header };
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
    const whole = await readFileStart(pathOf(this.folder, c.p), maxBytes + 1, false);
    if ('gone' in whole) return 'gone';
    if ('skip' in whole) {
      this.#settle(c.unique, this.#skipped);
      return 'skip';
    }
    if ('unreadable' in whole) return this.#message(c, maxBytes, c.header, { reason: whole.unreadable, detail: whole.detail });
    c.p.size = whole.size; // a file rewritten since the lstat is judged by what it holds now
    return this.#message(c, maxBytes, whole.size > maxBytes ? c.header : whole.ok);
  }


  /** Brings the remembered names in line with a listing: gone names are dropped, new ones become pending. */
  async #refresh(listing: Map<string, ListedEntry>): Promise<void> {
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
      if (!p) this.#pending.set(u, { ...placeOf(e), asked: false });
      else if (p.sub !== e.sub || p.name !== e.name) Object.assign(p, placeOf(e)); // moved or re-flagged: same message
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
      const listing = await listFolder(this.folder);
      for (const [u, p] of gone) {
        const now = listing.get(u);
        if (!now) this.#pending.delete(u);
        else if (now.sub !== p.sub || now.name !== p.name) await this.#lstat(u, Object.assign(p, placeOf(now)));
      }
    }
    // The order is kept between checks while no entry got its first lstat (after a restart 100,000
    // names are worked through `maxHeaders` a check: sorting them on every check stalled the event loop).
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
    const s = await lstatEntry(pathOf(this.folder, p));
    if (s === 'gone') return 'gone';
    if (s === 'not-a-file') this.#settle(unique, this.#skipped);
    else if (s !== 'retry') Object.assign(p, s);
  }
}

