/**
 * The order a Maildir pass reads its pending names in (maildir-mailbox.ts): oldest first by
 * (mtime, unique name), each entry lstat'ed once, the order kept between checks while no entry is
 * new. Reads only: an lstat per new entry (on the main thread, in slices: maildir-sync-reads.ts),
 * and a listing when one moved or went.
 */
import { listFolder, lstatEntry, pathOf, placeOf, type FileName, type ListedEntry } from './maildir-files.js';
import { Slice } from './maildir-sync-reads.js';

/** A unique name not yet settled: where it is, and (once lstat'ed) its mtime and size. */
export interface Pending extends FileName {
  mtimeMs?: number;
  size?: number;
  /** isRecorded was asked since the name was last handed out. */
  asked: boolean;
}

/**
 * The pending entries, lstat'ed once each, oldest first by (mtime, unique name).
 * @param pending the names not settled; a name no longer in the folder is deleted from it
 * @param kept the order the last call returned, or null
 * @param notAFile settles a name that is not a regular file (a symlink, FIFO… swapped in)
 * @returns the order, to be passed back as `kept` next time
 */
export async function oldestFirst(folder: string, pending: Map<string, Pending>, kept: [string, Pending][] | null, notAFile: (unique: string) => void): Promise<[string, Pending][]> {
  /** Fills in a pending entry's mtime and size; `gone` when the name is no longer there. */
  const lstat = (unique: string, p: Pending): 'gone' | void => {
    const s = lstatEntry(pathOf(folder, p));
    if (s === 'gone') return 'gone';
    if (s === 'not-a-file') notAFile(unique);
    else if (s !== 'retry') Object.assign(p, s);
  };
  const unstated = [...pending].filter(([, p]) => p.mtimeMs === undefined);
  const gone: [string, Pending][] = [];
  // On the main thread, in slices with the event loop answering between them (maildir-sync-reads.ts).
  const slice = new Slice();
  for (const [u, p] of unstated) {
    if (lstat(u, p) === 'gone') gone.push([u, p]);
    if (slice.spent(0)) await slice.next();
  }
  if (gone.length) {
    // Moved (new/ → cur/, a flag) or deleted since the listing: one more listing says which.
    const listing = await listFolder(folder);
    for (const [u, p] of gone) {
      const now = listing.get(u);
      if (!now) pending.delete(u);
      else if (now.sub !== p.sub || now.name !== p.name) lstat(u, Object.assign(p, placeOf(now)));
    }
  }
  // The order is kept between checks while no entry got its first lstat (after a restart 100,000
  // names are worked through `maxPrefixes` a check: sorting them on every check stalled the event loop).
  let order = kept;
  if (unstated.length > 0 || gone.length > 0 || !order) {
    order = [...pending].filter(([, p]) => p.mtimeMs !== undefined).sort(([ua, a], [ub, b]) => a.mtimeMs! - b.mtimeMs! || (ua < ub ? -1 : ua > ub ? 1 : 0));
  }
  // Settled names drop out of the kept order for good.
  return order.filter(([u, p]) => pending.get(u) === p);
}

/** Entries looked up between two yields to the event loop. */
const YIELD_EVERY = 1000;
const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Brings the remembered names in line with a listing: names no longer listed are dropped from
 * every set, new ones become pending (an entry that is not a regular file, by its d_type, is
 * settled into `settled.skipped`), and a pending one moved or re-flagged keeps its entry.
 * @returns the names dropped from `settled.misses` (the store's record drops them too)
 */
export async function applyListing(listing: Map<string, ListedEntry>, pending: Map<string, Pending>, settled: { recorded: Set<string>; misses: Set<string>; skipped: Set<string> }): Promise<string[]> {
  let n = 0;
  // 100,000 names: the event loop runs between slices (awaited only then: an await a name cost more than the lookups).
  const breathe = (): boolean => ++n % YIELD_EVERY === 0;
  const dropped: string[] = [];
  for (const set of [settled.recorded, settled.misses, settled.skipped]) {
    for (const u of set) {
      if (!listing.has(u) && set.delete(u) && set === settled.misses) dropped.push(u);
      if (breathe()) await yieldToLoop();
    }
  }
  for (const u of pending.keys()) if (!listing.has(u)) pending.delete(u);
  for (const [u, e] of listing) {
    if (breathe()) await yieldToLoop();
    if (settled.recorded.has(u) || settled.misses.has(u) || settled.skipped.has(u)) continue;
    // The directory entry's type is free with the listing (d_type); DT_UNKNOWN is settled by the lstat in oldestFirst.
    if (e.dirent.isSymbolicLink() || e.dirent.isFIFO() || e.dirent.isDirectory() || e.dirent.isSocket() || e.dirent.isBlockDevice() || e.dirent.isCharacterDevice()) {
      pending.delete(u);
      settled.skipped.add(u);
      continue;
    }
    const p = pending.get(u);
    if (!p) pending.set(u, { ...placeOf(e), asked: false });
    else if (p.sub !== e.sub || p.name !== e.name) Object.assign(p, placeOf(e)); // moved or re-flagged: same message
  }
  return dropped;
}

/**
 * Asks `isRecorded` about every pending name not asked yet (by its unique name); the recorded ones
 * move from `pending` to `recorded`. A first check after a restart may ask 100,000 times: the event
 * loop runs between slices.
 */
export async function settleRecorded(pending: Map<string, Pending>, isRecorded: (unique: string) => boolean, recorded: Set<string>): Promise<void> {
  let n = 0;
  for (const [u, p] of pending) {
    if (p.asked) continue;
    p.asked = true;
    if (isRecorded(u)) {
      pending.delete(u);
      recorded.add(u);
    }
    if (++n % YIELD_EVERY === 0) await yieldToLoop();
  }
}
