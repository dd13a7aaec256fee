/**
 * The `thread` of a turn's webhook envelope (docs/architecture.md, "The webhook envelope"): the
 * earlier turns' asks and replies, bounded by a byte budget. The envelope is stored with its turn
 * and posted whole on every attempt, so a thread that repeated every earlier turn in full made
 * the store grow quadratically with the turns (12 turns of 800 KB: 105 MB, the last turn alone
 * 13 MB; attack review, 2026-12-02). The newest entries are kept whole while they fit; the first
 * that does not is cut at the budget (`omitted_bytes` says how much of its text was left out);
 * older ones are left out and counted (`thread_omitted`). The counts are numbers in fields of
 * their own, never words in the text (docs/agent-text.md): each entry's text is the caller's or
 * the agent's alone.
 */
import type { ThreadEntry } from '../downlink/envelope.js';
import type { StoreTx } from '../store/store.js';

/** UTF-8 bytes of entry text a thread carries at most (512 KiB). */
export const THREAD_MAX_BYTES = 512 * 1024;

/** `text` cut to at most `max` UTF-8 bytes, at a character boundary; with the bytes left out. */
function cutText(text: string, max: number): { text: string; omitted: number } {
  const buf = Buffer.from(text, 'utf8');
  let end = max;
  // Back off to the start of a UTF-8 sequence (a continuation byte is 10xxxxxx).
  while (end > 0 && ((buf[end] ?? 0) & 0xc0) === 0x80) end--;
  return { text: buf.toString('utf8', 0, end), omitted: buf.length - end };
}

/**
 * The thread of turn `turn` of task `taskId`, oldest first, within `budget` bytes of entry text.
 * Reads the turns newest first and stops once the budget is spent: the text of turns left out is
 * not read (they are counted by one query).
 *
 * @param budget UTF-8 bytes of entry text (default {@link THREAD_MAX_BYTES})
 * @returns the entries, oldest first, and `omitted`: how many earlier entries were left out whole
 */
export function envelopeThread(tx: Pick<StoreTx, 'turns'>, taskId: string, turn: number, budget = THREAD_MAX_BYTES): { thread: ThreadEntry[]; omitted: number } {
  const newestFirst: ThreadEntry[] = [];
  let room = budget;
  let leftOut = 0;
  let stoppedAt: number | null = null;
  for (const t of tx.turns.threadNewestFirst(taskId, turn)) {
    const entries: ThreadEntry[] = [];
    if (t.replyText !== null) entries.push({ turn: t.turn, role: 'agent', text: t.replyText });
    entries.push({ turn: t.turn, role: 'user', text: t.ask });
    for (const e of entries) {
      if (room <= 0) {
        leftOut++;
        continue;
      }
      const bytes = Buffer.byteLength(e.text);
      if (bytes <= room) {
        newestFirst.push(e);
        room -= bytes;
      } else {
        const cut = cutText(e.text, room);
        newestFirst.push({ ...e, text: cut.text, omitted_bytes: cut.omitted });
        room = 0;
      }
    }
    if (room <= 0) {
      stoppedAt = t.turn;
      break;
    }
  }
  // The iterator is closed (break), so the connection is free for the count.
  const omitted = leftOut + (stoppedAt === null ? 0 : tx.turns.threadEntriesBefore(taskId, stoppedAt));
  return { thread: newestFirst.reverse(), omitted };
}
