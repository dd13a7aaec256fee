/**
 * The SEARCH of an IMAP check, bounded in the size of its answer (src/uplink/imap-search.ts),
 * against the scripted server (test/helpers/scripted-imap.ts) with the window lowered through the
 * `searchWindow` seam: a folder larger than the window is searched in windows of UIDs, no answer
 * holds more UIDs than the window, and the watermark passes only what was searched.
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
async function rig(uids: number[], window: number | undefined, o: Pick<ScriptedImapOptions, 'ignoreSearchRange'> = {}) {
  const searches: { range: string; answered: number }[] = [];
  const port = await listen((s) => scriptedImap(s, { ...o, uids, onSearch: (r, answered) => searches.push({ range: r, answered }) }));
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
  return { port, searches, check };
}

describe('the SEARCH of an IMAP check, in windows of UIDs', () => {
  it('a folder over the window is searched in windows, each answer at most the window, over checks that together list every match once, the watermark never passing what was not searched', async () => {
    const uids = [...range(1, 12), ...range(40, 52)]; // 25 messages, all matching; the window is 10
    const { searches, check } = await rig(uids, 10);
    const c1 = await check({ uidValidity: null, lastUid: 0 });
    expect(c1).toEqual({ listed: range(1, 10), upTo: 10 }); // the first window answered 10: enough for this check
    const c2 = await check({ uidValidity: '7', lastUid: c1.upTo });
    expect(c2).toEqual({ listed: [11, 12, ...range(40, 50)], upTo: 50 });
    const c3 = await check({ uidValidity: '7', lastUid: c2.upTo });
    expect(c3).toEqual({ listed: [51, 52], upTo: 52 });
    expect(searches.map((s) => s.range)).toEqual(['1:10', '11:20', '21:30', '31:40', '41:50', '51:*']);
    expect(Math.max(...searches.map((s) => s.answered))).toBe(10);
  });

  it('a folder within the window is searched in one SEARCH from the watermark, as before', async () => {
    const { searches, check } = await rig(range(1, 10), 10);
    expect(await check({ uidValidity: '7', lastUid: 3 })).toEqual({ listed: range(4, 10), upTo: 10 });
    expect(searches).toEqual([{ range: '4:*', answered: 7 }]);
  });

  it(`searches ${SEARCH_WINDOWS_PER_CHECK} windows a check at most: sparse UIDs are passed over checks, once two searched them`, async () => {
    const uids = [...range(1, 11), 500]; // 12 messages, a gap of 488 UIDs: 49 windows of 10
    const { searches, check } = await rig(uids, 10);
    let watermark: Watermark = { uidValidity: '7', lastUid: 11 };
    const perCheck: number[] = [];
    const upTos: number[] = [];
    let listed: number[] = [];
    while (listed.length === 0 && perCheck.length < 20) {
      const before = searches.length;
      const c = await check(watermark);
      perCheck.push(searches.length - before);
      upTos.push(c.upTo);
      listed = c.listed;
      watermark = { uidValidity: '7', lastUid: c.upTo };
    }
    expect(listed).toEqual([500]);
    expect(Math.max(...perCheck)).toBe(SEARCH_WINDOWS_PER_CHECK);
    // Each stretch of 16 windows is passed by the second check that searched it (attack review 8's rule).
    expect(upTos).toEqual([11, 171, 171, 331, 331, 491, 500]);
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
    expect(searches).toEqual([{ range: `1:${SEARCH_WINDOW_UIDS}`, answered: uids.length }]);
    expect(err).toBeInstanceOf(MailboxError);
    expect((err as MailboxError).kind).toBe('answer-too-large');
    expect((err as MailboxError).message).toBe(
      `IMAP server 127.0.0.1:${port} answered UID SEARCH in INBOX with a line longer than the 16,777,216 bytes this client accepts (not a network fault); nothing was read. ` +
        'The search asks for at most 1,000,000 UIDs at a time, whose answer fits, so the server answered UIDs outside the range asked (or a flood of messages arrived during the check); ' +
        "each check fails the same way until the folder answers less: move mail out of INBOX, or point mailbox.folder at a folder the agents' replies alone are filed into (a server-side filter)",
    );
  });
});
