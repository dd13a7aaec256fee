/**
 * The narrowed `UID SEARCH` of an IMAP check (src/uplink/imap-mailbox.ts), bounded in the size of
 * its answer. A SEARCH answer is one line of every matching UID (RFC 3501 §7.2.5), up to 11 bytes
 * each; a line longer than the client's limit (imap-mailbox.ts `MAX_LINE_BYTES`, 16 MiB) fails the
 * command, so a folder with about 1.5 million matching messages above the watermark (a flood of
 * forgeries From the agent's address) failed every check, and the watermark never moved (attack
 * review). A UID is unique in a folder, so `UID a:b` matches at most b − a + 1 messages, and never
 * more than the folder holds: a folder of at most {@link SEARCH_WINDOW_UIDS} messages (EXAMINE's
 * EXISTS) is searched in one `UID <after+1>:*` as before, a larger one in windows of that many UIDs,
 * the last open (`:*`) once it reaches UIDNEXT, until {@link SEARCH_WINDOW_UIDS} matches are found
 * or {@link SEARCH_WINDOWS_PER_CHECK} windows are searched. What lies above the last window searched
 * is the next check's: the caller's watermark never passes it (`top`). Mail of the person's that
 * no window matched is passed as before, once two checks' searches looked at it (imap-mailbox.ts),
 * so sparse UIDs cost two checks per {@link SEARCH_WINDOWS_PER_CHECK} windows; a server that sends no
 * UIDNEXT (RFC 3501 §6.3.1 requires it) gives no such passing, so there the windows go on, at most
 * 4,295 of them, until matches are found.
 */
import type { ImapFlow, SearchObject } from 'imapflow';
import { MailboxError } from './mailbox.js';

/** RFC 3501 §2.3.1.1: UIDs are 32-bit unsigned. */
export const MAX_UID = 4294967295;
/**
 * UIDs one SEARCH answer may hold at most: 11 bytes each (10 digits and a space), 11 MB, under the
 * 16 MiB line limit with room for messages that arrive between the EXAMINE and the SEARCH.
 */
export const SEARCH_WINDOW_UIDS = 1_000_000;
/** Windows one check searches at most (round trips): a folder whose UIDs are sparse is read over several checks. */
export const SEARCH_WINDOWS_PER_CHECK = 16;

/** What one check's SEARCH found. */
export interface Searched {
  /** Every UID the server answered, as answered (unsorted, possibly repeated; `n:*` may answer one at or below the watermark). */
  found: number[];
  /** Every message up to this UID was searched ({@link MAX_UID} when the last window was open). */
  top: number;
}

/**
 * `UID SEARCH UID <range> (OR …terms)` over the UIDs above `after`, in windows when the folder
 * could answer more than `window` UIDs (see the file comment).
 * @param client a connection with the folder EXAMINEd
 * @param after the watermark: UIDs above it are searched
 * @param folder the folder's name (for the error)
 * @param o `exists` and `below` (UIDNEXT − 1; 0 unknown) from the EXAMINE, the narrowing `terms`,
 *   and `window`: UIDs an answer may hold at most (default {@link SEARCH_WINDOW_UIDS}; a test's seam)
 * @throws MailboxError `protocol` when the server refuses a SEARCH (imapflow answers false: not "nothing matched")
 */
export async function searchAbove(
  client: ImapFlow,
  after: number,
  folder: string,
  o: { exists: number; below: number; terms: SearchObject[]; window?: number },
): Promise<Searched> {
  const window = Math.max(1, o.window ?? SEARCH_WINDOW_UIDS);
  const ask = async (uid: string): Promise<number[]> => {
    const answer = await client.search({ uid, or: o.terms }, { uid: true });
    if (!Array.isArray(answer)) throw new MailboxError(`IMAP SEARCH in ${folder} was refused by the server`, 'protocol');
    return answer;
  };
  if (o.exists <= window) return { found: await ask(`${after + 1}:*`), top: MAX_UID };
  const found: number[] = [];
  for (let lo = after + 1, windows = 1; ; lo += window, windows++) {
    const hi = Math.min(lo + window - 1, MAX_UID);
    // The window that reaches what the folder held at EXAMINE is left open, for what came since.
    const open = (o.below > 0 && hi >= o.below) || hi === MAX_UID;
    for (const u of await ask(open ? `${lo}:*` : `${lo}:${hi}`)) found.push(u);
    if (open) return { found, top: MAX_UID };
    if (found.length >= window || (o.below > 0 && windows >= SEARCH_WINDOWS_PER_CHECK)) return { found, top: hi };
  }
}
