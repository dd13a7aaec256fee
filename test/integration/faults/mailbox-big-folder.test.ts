/**
 * Mailbox faults: a folder of 100,000 messages stays bounded (what is fetched, how long a poll
 * takes, every mail gets a ledger verdict). The other mailbox faults are in mailbox.test.ts.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HEADER_BATCH } from '../../../src/uplink/mailbox.js';
import { AGENT_ADDRESS } from '../../helpers/bridge-harness.js';
import { startDovecot } from '../../helpers/dovecot.js';
import { multiAppend } from './imap-faults.js';
import { Summary } from './summary.js';
import { call, mailboxFaults, tally, working } from './mailbox-faults.js';

const cleanup: (() => Promise<void>)[] = [];
const summary = new Summary('Mailbox faults, big folder (test/integration/faults/mailbox-big-folder.test.ts)');

afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});
afterAll(() => {
  summary.print();
});

// The big-folder test starts a Dovecot of its own; this file has no shared one.
const { harness } = mailboxFaults(() => {
  throw new Error('mailbox-big-folder.test.ts has no shared Dovecot: pass `server`');
}, cleanup);

/**
 * A folder of 100,000 messages (A2A_FAULTS_BIG_N overrides the count), on a Dovecot of its own
 * that stores mail as mdbox (many messages per file): one MULTIAPPEND fills it in about a second,
 * where a Maildir (one file per message) took 10–60 s here depending on the disk's load. The
 * bridge's IMAP path does not depend on the storage format. The matching mail is spread through it.
 */
const BIG_N = Number(process.env.A2A_FAULTS_BIG_N ?? 100_000);
const CAP = 25;

describe(`a folder of ${BIG_N.toLocaleString('en')} messages stays bounded`, () => {
  it('only matching mail is fetched, header blocks first and whole only what passed them; polls stay bounded; the reply is applied', { timeout: 150_000 }, async () => {
    const big = await startDovecot({ mailFormat: 'mdbox' });
    cleanup.push(() => big.stop());
    const h = await harness({ server: big, folder: 'Big', mailboxToml: `max_fetch_per_check = ${CAP}\ncheck_wait_ms = 1000` });
    const t = await working(h);

    // Spread the matching mail through the folder: 60 untagged from the agent, 20 tagged from a stranger.
    const matching = new Map<number, string>(); // position → expected verdict
    for (let k = 0; k < 80; k++) matching.set(Math.floor(((k + 1) * BIG_N) / 81), k < 60 ? 'no-task-id' : 'auth:from-mismatch');
    const messages: Buffer[] = [];
    for (let i = 0; i < BIG_N; i++) {
      const kind = matching.get(i);
      const from = kind === 'no-task-id' ? `Grok Agent <${AGENT_ADDRESS}>` : kind ? `Stranger <stranger${i}@else.example>` : `Person ${i} <person${i}@elsewhere.example>`;
      const subject = kind === 'auth:from-mismatch' ? `Re: [GROK:${t.id}] hello` : kind ? `FYI ${i}` : `Newsletter ${i}: this week`;
      messages.push(
        Buffer.from(
          `From: ${from}\r\nTo: me@bridge.test\r\nSubject: ${subject}\r\nDate: Tue, 1 Jan 2030 12:00:00 +0000\r\nMessage-ID: <m${i}@elsewhere.example>\r\n\r\nMessage number ${i}.\r\n`,
        ),
      );
    }
    const populateStarted = performance.now();
    const appended = await multiAppend(big, 'Big', messages);
    const populateMs = performance.now() - populateStarted;
    expect(appended.lastUid - appended.firstUid + 1).toBe(BIG_N);
    const genuineUid = await big.append(await h.reply(h.envelope(t.n), { answer: 'Found it among the newsletters.' }), { folder: 'Big' });
    const expectedUids = new Set([...[...matching.keys()].map((pos) => appended.firstUid + pos), genuineUid]);
    const commandsBefore = h.imapCommands.length;

    // Poll until the reply is applied; each poll is bounded, each check reads at most CAP whole.
    const polls: number[] = [];
    const cycles: number[] = [];
    let state = '';
    for (let i = 0; i < 10 && state !== 'COMPLETED'; i++) {
      const started = performance.now();
      polls.push((await call(h, 'status', t.ctx)).ms);
      await h.app.bridge.idle(); // the check may go on after the answer
      cycles.push(performance.now() - started);
      state = h.app.bridge.ctx.store.tasks.get(t.id)!.state;
    }
    expect(state).toBe('COMPLETED');
    const sent = h.imapCommands.slice(commandsBefore).map((c) => c.replace(/^\S+ /, ''));
    expect((await call(h, 'status', t.ctx)).task.status.state).toBe('TASK_STATE_COMPLETED');
    for (const ms of polls) expect(ms).toBeLessThan(1000 + 1500); // check_wait_ms + margin

    const fetches = sent.filter((c) => /^UID FETCH /i.test(c));
    const bodyFetches = fetches.filter((c) => /BODY\.PEEK\[\]/.test(c));
    const uidsOf = (c: string): number[] =>
      c.split(' ')[2]!.split(',').flatMap((part) => {
        const [lo, hi] = part.split(':').map(Number);
        return hi === undefined ? [lo!] : Array.from({ length: hi - lo! + 1 }, (_, k) => lo! + k);
      });
    const fetched = new Set<number>();
    for (const c of fetches) {
      const uids = uidsOf(c);
      expect(uids.length).toBeLessThanOrEqual(/BODY\.PEEK\[\]/.test(c) ? CAP : HEADER_BATCH);
      for (const u of uids) {
        expect(expectedUids.has(u), `UID ${u} is not a matching message`).toBe(true);
        fetched.add(u);
      }
    }
    expect(fetched).toEqual(expectedUids);
    for (const c of sent.filter((x) => /^UID SEARCH /i.test(x))) expect(c).toMatch(/^UID SEARCH UID \d+:\* OR /i);
    expect(sent.some((c) => /^(UID )?(STORE|COPY|MOVE|EXPUNGE)|^SELECT /i.test(c))).toBe(false);

    const ledger = h.app.bridge.ctx.store.ledger.query({ limit: 1000 });
    expect(ledger).toHaveLength(expectedUids.size);
    expect(tally(ledger.map((l) => l.verdict))).toEqual({ 'no-task-id': 60, 'auth:from-mismatch': 20, 'applied:done': 1 });
    const examines = sent.filter((c) => /^EXAMINE /i.test(c)).length;
    // The 80 refused on their header block were never read whole: only the reply was.
    expect(bodyFetches.flatMap(uidsOf)).toEqual([genuineUid]);
    expect(examines).toBe(polls.length); // one check per poll
    expect(polls.length).toBe(1);
    summary.add(
      `a folder of ${BIG_N.toLocaleString('en')} messages (${expectedUids.size} matching, max_fetch_per_check = ${CAP})`,
      `populated by one MULTIAPPEND (Dovecot mdbox) in ${(populateMs / 1000).toFixed(1)} s; ${examines} check (narrowed UID SEARCH UID n:* OR FROM … SUBJECT …) read the header blocks of exactly the ${expectedUids.size} matching UIDs and no other message, and only the reply whole (${bodyFetches.length} body fetch); polls answered in ≤ ${Math.round(Math.max(...polls))} ms (check_wait_ms 1000), slowest check ${Math.round(Math.max(...cycles))} ms; ledger 60 no-task-id, 20 auth:from-mismatch (on their header blocks), 1 applied:done → COMPLETED`,
    );
  });
});
