/**
 * Re-finding Maildir files that were not where the last listing put them (ENOENT). A MUA moves a
 * file from new/ to cur/ when it shows it and renames it in cur/ when its flags change; each
 * rename keeps the unique name, the file name before `:` (Maildir spec: "cur/… the file name
 * after the colon", https://cr.yp.to/proto/maildir.html), so a fresh listing finds it again by that
 * name. A file in neither directory any more was deleted.
 */
import type { ListedEntry } from './maildir-files.js';

/**
 * Fresh listings taken at most to re-find one lot of files gone from where the last listing put
 * them: a MUA renames a file twice in a row (shown: new/ → cur/; then a flag), so one listing
 * could find it where it no longer was, and a message that had only moved was recorded
 * `unreadable: vanished` (attack review). Each listing costs one readdir of new/ and cur/.
 */
export const MOVED_RELISTS = 3;

/**
 * Why a file is `unreadable: vanished`: deleted, or renamed again after each listing ({@link refind}'s `moving`).
 * @param path where it was last seen
 * @param when what had been read of it, e.g. `after its header block was read`
 */
export function goneDetail(path: string, moving: boolean, when: string): string {
  return moving ? `${path} was renamed again after each of ${MOVED_RELISTS} listings, ${when}` : `${path} was deleted ${when}`;
}

/**
 * Takes a fresh listing (`relist`) and tries each item of `gone` again where its file is now
 * (`retry`: true when done with it, false when its file was gone again), up to
 * {@link MOVED_RELISTS} listings while some are gone again.
 * @param gone the items whose file was gone
 * @param uniqueOf an item's unique name (the key of the listing)
 * @returns the items whose file is in no listing any more (`deleted`), and those whose file was
 *   gone again after the last listing (`moving`)
 */
export async function refind<T>(
  gone: T[],
  uniqueOf: (item: T) => string,
  relist: () => Promise<Map<string, ListedEntry>>,
  retry: (item: T, now: ListedEntry) => boolean | Promise<boolean>,
): Promise<{ deleted: T[]; moving: T[] }> {
  const deleted: T[] = [];
  let moving = gone;
  for (let listings = 0; moving.length > 0 && listings < MOVED_RELISTS; listings++) {
    const listing = await relist();
    const again: T[] = [];
    for (const item of moving) {
      const now = listing.get(uniqueOf(item));
      if (!now) deleted.push(item);
      else if (!(await retry(item, now))) again.push(item);
    }
    moving = again;
  }
  return { deleted, moving };
}
