/**
 * The SEARCH of an IMAP check, bounded in the size of its answer (src/uplink/imap-search.ts),
 * against the scripted server (test/helpers/scripted-imap.ts) with the window lowered through the
 * `searchWindow` seam: a folder larger than the window is searched in windows of UIDs that each
 * hold at most a window's messages (placed by message number), no answer holds more UIDs than the
 * window, widely spaced UIDs are crossed in a window per window's messages, and the watermark
 * passes only what was searched.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ImapMailbox } from '../../../src/uplink/imap-mailbox.js';
import { SEARCH_WINDOW_UIDS, SEARCH_WINDOWS_PER_CHECK } from '../../../src/uplink/imap-search.js';
import { MailboxError, type Watermark } from '../../../src/uplink/mailbox.js';
import { req } from '../../helpers/imap-mailbox-kit.js';
import { scriptedImap, scriptedServers, type ScriptedImapOptions } from '../../helpers/scripted-imap.js';

const { listen, stop } = scriptedServers();
afterAll(stop);

const range = (lo: number, hi: number): number[] => Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);

/**
 * A mailbox on a scripted server holding `uids`, searching `window` UIDs at most (undefined: the
 * shipping window), and the SEARCHes it was sent: range and UIDs answered.
 */
async function rig(uids: number[], window: number | undefined, o: Pick<ScriptedImapOptions, 'ignoreSearchRange' | 'matching' | 'refuseSeqFetch'> = {}) {
  const searches: { range: string; answered: number }[] = [];
  const seqFetches: number[] = [];
  const port = await listen((s) =>
    scriptedImap(s, { ...o, uids, onSearch: (r, answered) => searches.push({ range: r, answered }), onSeqFetch: (n) => seqFetches.push(n) }),
  );
  const box = new ImapMailbox({ host: '127.0.0.1', port, tls: false, user: 'u', password: 'p4ssw0rd-x', folder: 'INBOX', timeoutMs: 5000 }, undefined, window === undefined ? {} : { searchWindow: window });
  /**
   * One check from `watermark`: the candidates it lists (handed out unread, so nothing is fetched)
   * and where the watermark may move once they all have a verdict.
   */
  const check = async (watermark: Watermark): Promise<{ listed: number[]; upTo: number }> => {
    const pass = await box.open(req({ watermark, waits: () => true }));
    try {
      const listed: number[] = [];
      let upTo = pass.floor;
      for (let batch = await pass.headers(); batch.length; batch = await pass.headers()) {
        listed.push(...batch.map((h) => h.uid));
        upTo = batch.at(-1)!.passes;
      }
      return { listed, upTo };
    } finally {
      await pass.close();
    }
  };
  /**
   * Checks from `watermark` until one lists something, 20 at most: what each listed, where each let
   * the watermark move, and the SEARCHes each sent.
   */
  const untilListed = async (watermark: Watermark) => {
    const checks: { listed: number[]; upTo: number; searches: number }[] = [];
    while (checks.length < 20 && !checks.at(-1)?.listed.length) {
      const before = searches.length;
      const c = await check(watermark);
      checks.push({ ...c, searches: searches.length - before });
      watermark = { uidValidity: '7', lastUid: c.upTo };
    }
    return checks;
  };
  return { port, searches, seqFetches, check, untilListed };
}

describe('the SEARCH of an IMAP check, in windows of UIDs', () => {
  it('a folder over the window is searched in windows, each answer at most the window, over checks that together list every match once, the watermark never passing what was not searched', async () => {
    const uids = [...range(1, 12), ...range(40, 52)]; // 25 messages, all matching; the window is 10
    const { searches, check } = await rig(uids, 10);
    const c1 = await check({ uidValidity: null, lastUid: 0 });
    expect(c1).toEqual({ listed: range(1, 10), upTo: 10 }); // the first window answered 10: enough for this check
    // The 11th to 20th messages above the watermark are UIDs 11 to 47: the window ends at 47.
    const c2 = await check({ uidValidity: '7', lastUid: c1.upTo });
    expect(c2).toEqual({ listed: [11, 12, ...range(40, 47)], upTo: 47 });
    const c3 = await check({ uidValidity: '7', lastUid: c2.upTo });
    expect(c3).toEqual({ listed: range(48, 52), upTo: 52 });
    expect(searches.map((s) => s.range)).toEqual(['1:10', '11:47', '48:*']);
    expect(Math.max(...searches.map((s) => s.answered))).toBe(10);
  });

  it('a server that refuses FETCH by message number is searched in windows of the window\'s width in UIDs, as before', async () => {
    const uids = [...range(1, 12), ...range(40, 52)];
    const { searches, seqFetches, check } = await rig(uids, 10, { refuseSeqFetch: true });
    const c1 = await check({ uidValidity: null, lastUid: 0 });
    const c2 = await check({ uidValidity: '7', lastUid: c1.upTo });
    const c3 = await check({ uidValidity: '7', lastUid: c2.upTo });
    expect([c1, c2, c3]).toEqual([
      { listed: range(1, 10), upTo: 10 },
      { listed: [11, 12, ...range(40, 50)], upTo: 50 },
      { listed: [51, 52], upTo: 52 },
    ]);
    expect(searches.map((s) => s.range)).toEqual(['1:10', '11:20', '21:30', '31:40', '41:50', '51:*']);
    expect(seqFetches.length).toBeGreaterThan(0);
  });

  it('widely spaced UIDs where only the newest matches: it is listed on the first check, in a window per 10 messages, not per 10 UIDs', async () => {
    // 120 messages 333 UIDs apart (to UID 39,628), the window 10: before, 3,963 windows of 10 UIDs, 16 a check (check 496).
    const uids = Array.from({ length: 120 }, (_, i) => 1 + i * 333);
    const { searches, seqFetches, untilListed } = await rig(uids, 10, { matching: [uids.at(-1)!] });
    const checks = await untilListed({ uidValidity: null, lastUid: 0 });
    expect(checks.map((c) => ({ listed: c.listed, searches: c.searches }))).toEqual([{ listed: [39628], searches: 12 }]);
    expect(searches.slice(0, 2).map((s) => s.range)).toEqual(['1:2998', '2999:6328']); // messages 1–10, 11–20
    expect(Math.max(...searches.map((s) => s.answered))).toBeLessThanOrEqual(10);
    // From a watermark within the folder (message 31's UID): the first message above it is found by
    // bisecting message numbers, then 9 windows, the last open.
    const fetched = seqFetches.length;
    const from = await untilListed({ uidValidity: '7', lastUid: uids[30]! });
    expect(from.map((c) => ({ listed: c.listed, searches: c.searches }))).toEqual([{ listed: [39628], searches: 9 }]);
    expect(searches.at(-9)!.range).toBe(`${uids[30]! + 1}:${uids[40]}`);
    expect(seqFetches.length - fetched).toBeLessThan(20);
  });

  it('a sparse stretch, then a flood of matches: no answer holds more than the window, every match listed once', async () => {
    // 40 messages of the person's 1,000 UIDs apart, then 35 forgeries in a row, all matching.
    const mail = Array.from({ length: 40 }, (_, i) => 1 + i * 1000);
    const flood = range(40_001, 40_035);
    const { searches, check } = await rig([...mail, ...flood], 10, { matching: flood });
    const listed: number[] = [];
    let watermark: Watermark = { uidValidity: null, lastUid: 0 };
    for (let i = 0; i < 10 && listed.length < flood.length; i++) {
      const c = await check(watermark);
      listed.push(...c.listed);
      watermark = { uidValidity: '7', lastUid: c.upTo };
    }
    expect(listed).toEqual(flood);
    expect(Math.max(...searches.map((s) => s.answered))).toBeLessThanOrEqual(10);
  });

  it('a folder within the window is searched in one SEARCH from the watermark, as before', async () => {
    const { searches, check } = await rig(range(1, 10), 10);
    expect(await check({ uidValidity: '7', lastUid: 3 })).toEqual({ listed: range(4, 10), upTo: 10 });
    expect(searches).toEqual([{ range: '4:*', answered: 7 }]);
  });

  it(`searches ${SEARCH_WINDOWS_PER_CHECK} windows a check at most: the person's mail is passed over checks, once two searched it`, async () => {
    // 200 messages, only the newest matching: 20 windows of 10 messages.
    const { searches, untilListed } = await rig(range(1, 200), 10, { matching: [200] });
    const checks = await untilListed({ uidValidity: '7', lastUid: 11 });
    expect(checks.map((c) => c.listed)).toEqual([[], [], [200]]);
    expect(Math.max(...checks.map((c) => c.searches))).toBe(SEARCH_WINDOWS_PER_CHECK);
    // The stretch of 16 windows is passed by the second check that searched it (attack review 8's rule).
    expect(checks.map((c) => c.upTo)).toEqual([11, 171, 200]);
    expect(Math.max(...searches.map((s) => s.answered))).toBeLessThanOrEqual(10);
  });

  it('an answer over the line limit (a server that ignores the UID range asked) is a MailboxError answer-too-large naming UID SEARCH, the limit and what to change, not a connect failure', async () => {
    // 1.6 million 10-digit UIDs: an answer of 17.6 MB, over the 16 MiB line limit, to the first window of the shipping size.
    const uids = Array.from({ length: 1_600_000 }, (_, i) => 1_000_000_000 + i);
    const { port, searches, check } = await rig(uids, undefined, { ignoreSearchRange: true });
    const err = await check({ uidValidity: null, lastUid: 0 }).then(
      () => null,
      (e: unknown) => e,
    );
    // The first window ends at the millionth message's UID.
    expect(searches).toEqual([{ range: `1:${uids[SEARCH_WINDOW_UIDS - 1]}`, answered: uids.length }]);
    expect(err).toBeInstanceOf(MailboxError);
    expect((err as MailboxError).kind).toBe('answer-too-large');
    expect((err as MailboxError).message).toBe(
      `IMAP server 127.0.0.1:${port} answered UID SEARCH in INBOX with a line longer than the 16,777,216 bytes this client accepts (not a network fault); nothing was read. ` +
        'The search asks for at most 1,000,000 UIDs at a time, whose answer fits, so the server answered UIDs outside the range asked (or a flood of messages arrived during the check); ' +
        "each check fails the same way until the folder answers less: move mail out of INBOX, or point mailbox.folder at a folder the agents' replies alone are filed into (a server-side filter)",
    );
  });
});
