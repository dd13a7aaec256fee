/**
 * The Maildir mailbox: reads a local Maildir folder's `new/` and `cur/` read-only. A person's MUA
 * (or our demo) writes into the same folder, so nothing here renames a file, moves it from `new/`
 * to `cur/`, or changes a flag (flags live in the file name after `:2,`); files are only listed,
 * lstat'ed and read.
 *
 * Keyed on names, not times. A message is its *unique name*, the file name before the first `:` (Maildir spec), so a message a MUA
 * moves from `new/` to `cur/` or re-flags stays the same message; its source key is `maildir:<folder path>:<unique name>` (different
 * files sharing one are keyed apart: maildir-files.ts `keyApart`). Each check lists both directories and hands out every name the
 * caller has not recorded (`req.isRecorded`), whatever the file's mtime. Only names not seen before are opened: names recorded, names
 * found not ours (no agent's From or tag, kept in the store through `req.notOurs`, so a restart does not open them again) and entries
 * that are not regular files are not touched again; a name the caller says waits (`req.waits`: a deferred reply not due yet) is
 * handed out `unread`, nothing opened, nothing counted. Per pass the cost is a stat of each directory (a listing only when one
 * changed, and at least once a minute), plus at most `req.maxPrefixes` files opened (a file found not ours on its first read counts a
 * quarter), each read to the end of its header block within its first `STAMP_PREFIX_BYTES` (a block that runs on is handed out on
 * those bytes, `prefixOnly`, when they match the narrowing; read on to `NARROWING_READ_BYTES` only when they do not hold its first
 * From and Subject whole; both reads on the main thread in slices, maildir-sync-reads.ts), plus at most `req.maxHeaders` header
 * blocks read on and the whole messages the caller asks for (on the thread pool). Every byte read counts in `bytesFetched`. Files are
 * taken oldest first (maildir-order.ts); a uid is the mtime in ms, clamped to now, and the watermark built from it is for information
 * only. The rules and measurements: docs/architecture.md, "The header stage".
 *
 * Every file that may be mail leaves a trace: one whose header block runs past `NARROWING_READ_BYTES` is handed out whatever the
 * narrowing (which does not read it). One bad entry never stops the mailbox: a symlink, FIFO, socket or directory is not mail and is
 * skipped, and a file that cannot be opened (EACCES) or vanishes after its header block matched is handed out with `unreadable` set,
 * so the caller records it and goes on. Only a folder that cannot be listed, or a process-wide shortage (EMFILE…), fails the pass.
 * UIDVALIDITY: see `readUidValidity` in maildir-files.ts; when it changes, what this reader remembers is dropped and the folder is
 * read again (the ledger dedupes).
 */
import { MAX_HEADER_BLOCK_BYTES, STAMP_PREFIX_BYTES } from './gates.js';
import { DEFAULT_MAX_HEADERS, DEFAULT_MAX_PREFIXES, HEADER_BATCH, readOldest, unreadableMessage, type CheckRequest, type CheckResult, type FetchedMessage, type HeaderedMessage, type Mailbox, type MailboxPass } from './mailbox.js';
import { dirTimes, listFolder, listingHolds, maildirSource, pathOf, placeOf, readFileStart, readHeaderStart, readUidValidity, shownPath, type HeadRead, type ListedEntry } from './maildir-files.js';
import { goneDetail, refind } from './maildir-moved.js';
import { matches, NARROWING_READ_BYTES, NOT_OURS_SHARE } from './maildir-narrowing.js';
import { applyListing, oldestFirst, settleRecorded, type Pending } from './maildir-order.js';
import { readHeadSync, Slice } from './maildir-sync-reads.js';

export { deliverToMaildir } from './maildir-deliver.js';
export { uniqueName } from './maildir-files.js';

/** Bytes read from the start of a file at most to find its header block: the longest the gates read (`MAX_HEADER_BLOCK_BYTES`). */
export const MAILDIR_HEADER_CAP_BYTES = MAX_HEADER_BLOCK_BYTES;

/** Names found not ours saved to the store in one transaction, at most (21,000 in one held the event loop 50–100 ms; 256 a transaction cost 265 ms in all). */
const MISSES_PER_SAVE = 1024;

/** A file chosen for this check: its header block matched the narrowing, or it could not be read at all. */
interface Chosen {
  unique: string;
  p: Pending;
  /** Its header block, or with `prefixOnly` the block's first `STAMP_PREFIX_BYTES`. */
  header: Buffer;
  prefixOnly?: boolean;
  /** Its whole header block, when the narrowing read it (not read again by `headerBlocks`). */
  block?: Buffer;
  unreadable?: FetchedMessage['unreadable'];
}

/** A file's first bytes as a pass takes them (whether its header block runs on past them), or why not. */
type Head = { header: Buffer; runsOn: boolean } | { unreadable: NonNullable<Chosen['unreadable']> } | 'gone' | 'skip';

/** What a pass did: bytes read, header blocks read on past their prefix (at most `max`), files found not ours. */
interface Work {
  bytes: number;
  blocks: number;
  max: number;
  notOurs: number;
}

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
  /** The key `#misses` belongs to (UIDVALIDITY and the narrowing), and the names to add to and drop from the store's record under it. */
  #missesFor = '';
  #missesAdded: string[] = [];
  #missesDropped: string[] = [];
  /** Unique names that are not regular files (symlink, FIFO, socket, directory). */
  readonly #skipped = new Set<string>();
  /** The UIDVALIDITY all the above belongs to. */
  #uidValidity: string | null = null;
  /** The pending entries oldest first, as the last check sorted them (maildir-order.ts). */
  #order: [string, Pending][] | null = null;
  /** The directories' mtimes when the last listing was taken, and when (ms): see listingHolds (maildir-files.ts). */
  #listed: { newM: bigint | null; curM: bigint | null; at: number } | null = null;

  readonly #afterHeaderRead: ((file: string) => void | Promise<void>) | undefined;
  readonly #afterRelist: (() => void | Promise<void>) | undefined;

  /**
   * @param dir the Maildir folder
   * @param o.afterHeaderRead called with a file's path after its header block was read and before it is read whole, and
   *   `afterRelist` after each listing taken to re-find files moved since the last (a test deletes or renames a file mid-read)
   */
  constructor(dir: string, o: { afterHeaderRead?: (file: string) => void | Promise<void>; afterRelist?: () => void | Promise<void> } = {}) {
    this.folder = dir;
    this.#afterHeaderRead = o.afterHeaderRead;
    this.#afterRelist = o.afterRelist;
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
    const criteria = JSON.stringify([uidValidity, req.fromAddresses, req.subjectContains]);
    let relist = false;
    if (criteria !== this.#missesFor) {
      this.#misses.clear(); // other narrowing, other misses: listed again below
      this.#missesAdded = [];
      this.#missesDropped = [];
      this.#missesFor = criteria;
      // Those a run before this one found (names of files since deleted are dropped as listed).
      for (const u of req.notOurs?.load(criteria) ?? []) this.#settle(u, this.#misses);
      relist = true;
    }
    const dirs = await dirTimes(this.folder);
    let candidates: [string, Pending][] = [];
    // Nothing to narrow on means nothing may be read.
    if (narrowing) {
      if (relist || !listingHolds(this.#listed, dirs, Date.now())) {
        const gone = await applyListing(await listFolder(this.folder), this.#pending, { recorded: this.#recorded, misses: this.#misses, skipped: this.#skipped });
        this.#missesDropped.push(...gone);
        this.#listed = { ...dirs, at: Date.now() };
      }
      if (req.isRecorded) await settleRecorded(this.#pending, (u) => req.isRecorded!(this.#source(u)), this.#recorded);
      this.#order = await oldestFirst(this.folder, this.#pending, this.#order, (u) => this.#settle(u, this.#skipped));
      candidates = this.#order;
    }
    /** In quarters of a prefix: a file found not ours on its first read costs one, any other four (NOT_OURS_SHARE). */
    const budget = Math.max(0, req.maxPrefixes ?? DEFAULT_MAX_PREFIXES) * NOT_OURS_SHARE;
    let spent = 0;
    /** Handed out by headers(), by source: what whole() reads. */
    const handed = new Map<string, Chosen>();
    let cursor = 0;
    let reads = 0;
    /** Bytes read, and header blocks read on past their prefix (the narrowing's and `headerBlocks`'), by this pass. */
    const work: Work = { bytes: 0, blocks: 0, max: Math.max(0, req.maxHeaders ?? DEFAULT_MAX_HEADERS), notOurs: 0 };
    /** Something waits that this pass did not hand out although it was read (a file gone twice). */
    let waiting = false;
    const headered = (c: Chosen): HeaderedMessage => {
      const m = this.#message(c, req.maxMessageBytes, c.header, c.unreadable);
      handed.set(m.source, c);
      c.p.asked = false; // handed out: ask isRecorded again next time
      return { uid: m.uid, source: m.source, head: c.header, size: m.size, receivedAt: m.receivedAt, passes: m.uid, ...(c.prefixOnly ? { prefixOnly: true } : {}), ...(c.unreadable ? { unreadable: c.unreadable } : {}) };
    };
    /** Whether some header block was left for the next pass (over `maxHeaders`). */
    let left = false;
    return {
      uidValidity,
      uidValidityChanged: wm.uidValidity !== null && wm.uidValidity !== uidValidity,
      floor: wm.uidValidity === uidValidity ? wm.lastUid : 0,
      get more() {
        return waiting || left || cursor < candidates.length;
      },
      get bytesFetched() {
        return work.bytes;
      },
      get filesOpened() {
        return reads;
      },
      get notOurs() {
        return work.notOurs;
      },
      giveBack: (count) => {
        spent = Math.max(0, spent - count * NOT_OURS_SHARE);
      },
      headers: async () => {
        const out: HeaderedMessage[] = [];
        const moved: [string, Pending][] = [];
        const slice = new Slice(); // files read on the main thread, the event loop answering between slices
        while (cursor < candidates.length && out.length < HEADER_BATCH && budget - spent >= NOT_OURS_SHARE) {
          const [unique, p] = candidates[cursor++]!;
          if (this.#pending.get(unique) !== p) continue; // settled since the pass opened
          if (req.waits?.(this.#source(unique))) {
            out.push({ ...headered({ unique, p, header: Buffer.alloc(0) }), unread: true }); // waits for a later pass: nothing opened, nothing spent
            continue;
          }
          reads++;
          const before = work.bytes;
          const s = this.#examine(unique, p, req, work);
          // A miss decided on the first read costs a quarter (`miss`); any other file, a whole prefix.
          spent += s === 'miss' ? 1 : NOT_OURS_SHARE;
          if (s === 'gone') moved.push([unique, p]);
          else if (s === 'later') left = true;
          else if (typeof s !== 'string') out.push(headered(s));
          if (!slice.spent(work.bytes - before)) continue;
          if (this.#missesAdded.length >= MISSES_PER_SAVE) this.#saveMisses(req);
          await slice.next();
        }
        // Moved (new/ → cur/, a flag) or deleted since the listing: a fresh listing says which (maildir-moved.ts).
        const { deleted, moving } = await refind(moved, ([unique]) => unique, () => this.#relist(), ([unique, p], now) => {
          const seen = this.#examine(unique, Object.assign(p, placeOf(now)), req, work);
          if (seen === 'later') left = true;
          else if (typeof seen !== 'string') out.push(headered(seen));
          return seen !== 'gone';
        });
        for (const [unique] of deleted) this.#pending.delete(unique); // deleted before anything was read: it is not in the folder
        if (moving.length) waiting = true; // moved again: the next pass reads it
        this.#saveMisses(req);
        return out.sort((x, y) => x.uid - y.uid || (x.source < y.source ? -1 : x.source > y.source ? 1 : 0));
      },
      headerBlocks: async (messages) => {
        const out: HeaderedMessage[] = [];
        for (const h of messages) {
          const c = handed.get(h.source);
          if (!c) throw new Error(`${h.source} was not handed out by this pass`);
          const { prefixOnly: _, ...rest } = h;
          if (c.block) {
            Object.assign(c, { header: c.block, prefixOnly: false });
            out.push({ ...rest, head: c.block });
            continue;
          }
          if (work.blocks >= work.max) {
            left = true; // waits for the next pass
            continue;
          }
          work.blocks++;
          const readBlock = async (at: Pending): Promise<Head> => this.#head(c.unique, at, await readHeaderStart(pathOf(this.folder, at), MAILDIR_HEADER_CAP_BYTES));
          let block = await readBlock(c.p);
          // Moved (new/ → cur/, a flag) since its prefix was read: read again from where it is now.
          const { moving } = block !== 'gone' ? { moving: [] } : await refind([c], (x) => x.unique, () => this.#relist(), async (x, now) => (block = await readBlock(Object.assign(x.p, placeOf(now)))) !== 'gone');
          if (typeof block === 'string' || 'unreadable' in block) {
            const why = typeof block === 'string' ? { reason: 'vanished' as const, detail: goneDetail(shownPath(pathOf(this.folder, c.p)), moving.length > 0, "after its header block's first bytes were read") } : block.unreadable;
            out.push({ ...rest, head: Buffer.alloc(0), unreadable: why });
          } else {
            Object.assign(c, { header: block.header, prefixOnly: false });
            work.bytes += block.header.length;
            out.push({ ...rest, head: block.header });
          }
        }
        return out;
      },
      whole: async (messages) => {
        const out = new Map<string, FetchedMessage>();
        const lost: [HeaderedMessage, Chosen][] = [];
        const vanished = (h: HeaderedMessage, c: Chosen, moving = false): FetchedMessage =>
          unreadableMessage(h, { reason: 'vanished', detail: goneDetail(shownPath(pathOf(this.folder, c.p)), moving, 'after its header block was read') });
        const read = async (h: HeaderedMessage, c: Chosen): Promise<FetchedMessage | 'gone'> => {
          const m = await this.#whole(c, req.maxMessageBytes);
          if (m === 'skip') return vanished(h, c); // no longer a regular file
          if (m !== 'gone' && m.raw !== c.header) work.bytes += m.raw.length;
          return m;
        };
        for (const h of messages) {
          const c = handed.get(h.source);
          if (!c) throw new Error(`${h.source} was not handed out by this pass`);
          if (c.prefixOnly || h.unread) throw new Error(`${h.source}: whole() of a candidate ${h.unread ? 'handed out unread' : 'before headerBlocks()'} (a defect)`);
          if (h.unreadable) {
            out.set(h.source, unreadableMessage(h, h.unreadable));
            continue;
          }
          await this.#afterHeaderRead?.(shownPath(pathOf(this.folder, c.p)));
          const m = await read(h, c);
          if (m === 'gone') lost.push([h, c]);
          else out.set(h.source, m);
        }
        // A MUA may have moved them (new/ → cur/, a flag) since: a fresh listing finds them, each read
        // again from where it is now (maildir-moved.ts); one in neither directory was deleted.
        const { deleted, moving } = await refind(lost, ([, c]) => c.unique, () => this.#relist(), async ([h, c], now) => {
          Object.assign(c.p, placeOf(now));
          const m = await read(h, c);
          if (m !== 'gone') out.set(h.source, m);
          return m !== 'gone';
        });
        for (const [h, c] of deleted) out.set(h.source, vanished(h, c));
        for (const [h, c] of moving) out.set(h.source, vanished(h, c, true)); // renamed again after each listing
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
   * Reads a pending file's header block and judges it by the narrowing (maildir-narrowing.ts): a
   * match (or an unreadable file, or one whose header block runs past `NARROWING_READ_BYTES`, which
   * the narrowing does not read: the gates judge it on its prefix) to hand out, or why not; `later`
   * when it would read on past the prefix and `work.max` header blocks were read on already; `miss`
   * when found not ours on the prefix alone, `miss-read-on` after reading on. Counts into `work`.
   * Synchronous (maildir-sync-reads.ts): what is handed out is copied out of the shared buffer.
   */
  #examine(unique: string, p: Pending, req: CheckRequest, work: Work): Chosen | 'gone' | 'skip' | 'miss' | 'miss-read-on' | 'later' {
    const prefix = this.#head(unique, p, readHeadSync(pathOf(this.folder, p), STAMP_PREFIX_BYTES));
    if (typeof prefix === 'string') return prefix;
    if ('unreadable' in prefix) return { unique, p, header: Buffer.alloc(0), unreadable: prefix.unreadable };
    work.bytes += prefix.header.length;
    const chosen = (): Chosen => ({ unique, p, header: Buffer.from(prefix.header), ...(prefix.runsOn ? { prefixOnly: true } : {}) });
    // A block that runs on is matched on its whole lines (the last may be cut); read on only when
    // they do not hold its first From and first Subject whole (maildir-narrowing.ts FirstFields).
    const first = { from: false, subject: false };
    if (matches(prefix.runsOn ? prefix.header.subarray(0, prefix.header.lastIndexOf(0x0a) + 1) : prefix.header, req, undefined, first)) return chosen();
    if (prefix.runsOn && !(first.from && first.subject)) {
      if (work.blocks >= work.max) return 'later';
      work.blocks++;
      const kept = chosen(); // copied before the next read reuses the buffer
      const block = this.#head(unique, p, readHeadSync(pathOf(this.folder, p), NARROWING_READ_BYTES));
      if (typeof block === 'string') return block;
      if ('unreadable' in block) return { unique, p, header: Buffer.alloc(0), unreadable: block.unreadable };
      work.bytes += block.header.length;
      if (block.runsOn) return kept; // past what the narrowing reads: the gates judge it
      if (matches(block.header, req)) return { ...kept, block: Buffer.from(block.header) };
    }
    this.#settle(unique, this.#misses);
    this.#missesAdded.push(unique);
    work.notOurs++;
    return prefix.runsOn && !(first.from && first.subject) ? 'miss-read-on' : 'miss';
  }

  /** A read of a file's first bytes as the pass takes it: settles a file that is not a regular one, and notes the file's size. */
  #head(unique: string, p: Pending, head: HeadRead): Head {
    if ('gone' in head) return 'gone'; // moved or deleted since the listing
    if ('skip' in head) this.#settle(unique, this.#skipped);
    else if ('header' in head) p.size = head.size;
    return 'skip' in head ? 'skip' : 'unreadable' in head ? { unreadable: { reason: head.unreadable, detail: head.detail } } : head;
  }

  /** A fresh listing, to re-find files moved since the last (then the `afterRelist` seam). */
  async #relist(): Promise<Map<string, ListedEntry>> {
    const listing = await listFolder(this.folder);
    await this.#afterRelist?.();
    return listing;
  }

  /** Hands the misses found and dropped since the last call to the store's record (`req.notOurs`). */
  #saveMisses(req: CheckRequest): void {
    if (!this.#missesAdded.length && !this.#missesDropped.length) return;
    req.notOurs?.save(this.#missesFor, this.#missesAdded, this.#missesDropped);
    this.#missesAdded = [];
    this.#missesDropped = [];
  }

  /** Holds nothing open; a no-op kept for the interface. */
  async close(): Promise<void> {}

  #source(unique: string): string {
    return maildirSource(this.folder, unique);
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
}

