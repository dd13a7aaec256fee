/**
 * The narrowed `UID SEARCH` of an IMAP check (src/uplink/imap-mailbox.ts), bounded in the size of
 * its answer. A SEARCH answer is one line of every matching UID (RFC 3501 §7.2.5), up to 11 bytes
 * each; a line longer than the client's limit (imap-mailbox.ts `MAX_LINE_BYTES`, 16 MiB) fails the
 * command, so a folder with about 1.5 million matching messages above the watermark (a flood of
 * forgeries From the agent's address) failed every check, and the watermark never moved (attack
 * review). A UID range `UID a:b` matches at most as many messages as it holds, and never more than
 * the folder holds: a folder of at most {@link SEARCH_WINDOW_UIDS} messages (EXAMINE's EXISTS) is
 * searched in one `UID <after+1>:*` as before, a larger one in windows that each hold at most that
 * many messages, the last open (`:*`) once it reaches UIDNEXT or the last message, until
 * {@link SEARCH_WINDOW_UIDS} matches are found or {@link SEARCH_WINDOWS_PER_CHECK} windows are
 * searched. What lies above the last window searched is the next check's: the caller's watermark
 * never passes it (`top`); mail of the person's that no window matched is passed as before, once
 * two checks' searches looked at it (imap-mailbox.ts).
 *
 * A window is placed by message sequence number (RFC 3501 §2.3.1.2: messages are numbered in
 * ascending UID order): it ends at the UID of the message {@link SEARCH_WINDOW_UIDS} − 1 numbers
 * past the first one above its start (`FETCH <n> (UID)`, one round trip), so widely spaced UIDs
 * are crossed a window per million messages, not per million UIDs. Before, windows were a million
 * UIDs wide: 1.2 million messages 333 UIDs apart (UIDs to 399.6 million) took 784 SEARCHes over 49
 * checks, at 15 s apart, to list the newest reply; UIDs near 4.29e9, 535 checks (attack review).
 * The first message above the watermark is found by bisecting message numbers with the same FETCH
 * (none when the watermark is 0, one when fewer than a window's messages lie above it, about
 * log2(16 × messages ÷ window) at most: the search stops within a sixteenth of a window). A window
 * never ends below `start + window − 1`, the old width, which holds at most that many UIDs; a FETCH
 * the server refuses (a message expunged meanwhile) leaves just that width. A message expunged
 * between the bisection and a window's FETCH lets that window hold one message more each. Not a
 * UID width widened after sparse answers: a wide window after a sparse stretch could hold a flood
 * of forgeries whole, over the line limit, on every check from the same watermark.
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
/** Windows (SEARCHes) one check searches at most: a folder of over 16 windows' messages is read over several checks. */
export const SEARCH_WINDOWS_PER_CHECK = 16;

/** What one check's SEARCH found. */
export interface Searched {
  /** Every UID the server answered, as answered (unsorted, possibly repeated; `n:*` may answer one at or below the watermark). */
  found: number[];
  /** Every message up to this UID was searched ({@link MAX_UID} when the last window was open). */
  top: number;
}

/**
 * `FETCH <seq> (UID)`: the UID of message number `seq`, or null when the server answers none or
 * refuses (a number past the last message, after an expunge): the caller then keeps to bounds it
 * knows without it. A lost connection fails the next SEARCH, which reports it. Answers are kept in
 * `seen`, so a number the bisection read is not asked again.
 */
async function uidAt(client: ImapFlow, seq: number, seen: Map<number, number | null>): Promise<number | null> {
  if (seen.has(seq)) return seen.get(seq)!;
  let uid: number | null = null;
  try {
    const m = await client.fetchOne(String(seq), { uid: true });
    if (m && Number.isInteger(m.uid) && m.uid > 0) uid = m.uid;
  } catch {
    uid = null;
  }
  seen.set(seq, uid);
  return uid;
}

/**
 * A message number at or below that of the first message with a UID above `after` (exists + 1
 * when there is none), by bisection with {@link uidAt}; stops once within `slack` numbers, or once
 * fewer than `window` messages lie at or above it (the first window is then open anyway).
 */
async function firstAbove(client: ImapFlow, after: number, exists: number, window: number, seen: Map<number, number | null>): Promise<number> {
  let a = 1; // every message numbered below a has a UID ≤ after
  let b = exists + 1; // message b (when b ≤ exists) has a UID > after
  if (after === 0) return a;
  const slack = Math.floor(window / 16);
  // The steady state of a large folder: fewer than a window's messages are new, one FETCH says so.
  let probe = Math.max(1, exists - window + 1);
  while (a < b && b - a > slack && a + window - 1 < exists) {
    const u = await uidAt(client, probe, seen);
    if (u === null) return a;
    if (u > after) b = probe;
    else a = probe + 1;
    probe = a + Math.floor((b - a) / 2);
  }
  return a;
}

/**
 * `UID SEARCH UID <range> (OR …terms)` over the UIDs above `after`, in windows of at most `window`
 * messages when the folder holds more (see the file comment).
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
  // first: a message number at or below the first message with a UID ≥ lo.
  const seen = new Map<number, number | null>();
  let first = await firstAbove(client, after, o.exists, window, seen);
  for (let lo = after + 1, windows = 1; ; windows++) {
    const last = first + window - 1; // the window holds messages first..last at most
    const lastUid = last < o.exists ? await uidAt(client, last, seen) : null;
    // The window that reaches the last message, or what the folder held at EXAMINE, is left open, for what came since.
    const hi = last >= o.exists ? MAX_UID : Math.min(Math.max(lastUid ?? 0, lo + window - 1), MAX_UID);
    const open = (o.below > 0 && hi >= o.below) || hi === MAX_UID;
    for (const u of await ask(open ? `${lo}:*` : `${lo}:${hi}`)) found.push(u);
    if (open) return { found, top: MAX_UID };
    if (found.length >= window || (o.below > 0 && windows >= SEARCH_WINDOWS_PER_CHECK)) return { found, top: hi };
    // Message `last` is at or below hi when its UID was read: the next window's first is after it.
    if (lastUid !== null) first = last + 1;
    lo = hi + 1;
  }
}
