import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerJson } from '../../../src/cli/ledger.js';
import type { showJson } from '../../../src/cli/show.js';
import { SHOWN_LEDGER } from '../../../src/cli/show.js';
import { runCli } from '../../helpers/cli.js';
import { IDS, buildStore } from '../../helpers/store-fixture.js';

type ShowJson = ReturnType<typeof showJson>;

/**
 * `show` on a task that forged mail flooded: anyone who can mail the mailbox and knows a task id
 * adds a ledger row naming it with each message. The timeline lists a bounded number of rows (the
 * newest, and the genuine reply that came before the flood), counts the rest per verdict and names
 * the `ledger` command that pages through them.
 */
const FORGED = 5000;
let dir: string;
let store: string;
let replyId: number;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mb-show-bound-'));
  store = join(dir, 'bridge.sqlite');
  const now = Math.floor(Date.now() / 1000) * 1000;
  const s = buildStore(store, now);
  replyId = s.turns.ofTask(IDS.oldCompleted)[0]!.replyLedgerId!;
  // The forgeries come after the genuine reply, as a flood would, through the store's own writes.
  s.tx((db) => {
    for (let i = 0; i < FORGED; i++) {
      db.ledger.record({
        source: `maildir:INBOX:forged-${i}`,
        seenAt: now - 30 * 86_400_000 + i,
        messageId: `<f${i}@evil.example>`,
        fromHeader: 'a@agent.example',
        subject: `Re: [GROK:${IDS.oldCompleted}]`,
        dateHeader: null,
        size: 200,
        rawSha256: createHash('sha256').update(`forged ${i}`).digest('hex'),
        raw: null,
        agent: 'grok',
        taskId: IDS.oldCompleted,
        verdict: i % 10 === 0 ? 'auth:from-mismatch' : 'bad-token',
        reason: 'forged',
      });
    }
  });
  s.close();
}, 60_000);
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('show on a task with many ledger rows', () => {
  it('lists the newest rows and the genuine reply, and counts the rest per verdict with the command that lists them', async () => {
    const r = await runCli(['show', IDS.oldCompleted, '--db', store]);
    expect(r.status, r.stderr).toBe(0);
    const mailLines = r.stdout.split('\n').filter((l) => /^\S+\s+mail #\d+ /.test(l));
    expect(mailLines).toHaveLength(SHOWN_LEDGER.newest + 1);
    expect(r.stdout).toMatch(new RegExp(`mail #${replyId} applied:done: all gates passed`));
    // Its gaps are still measured from the reply row.
    expect(r.stdout).toMatch(/mail Date → mail seen\s+20 s\s+mail delivery and polling/);
    // The newest 200 forgeries: 180 bad-token and 20 auth:from-mismatch (every tenth) are listed.
    const oldestListed = Number(/mail #(\d+) /.exec(mailLines[1]!)![1]);
    expect(r.stdout).toContain(
      `mail: ${SHOWN_LEDGER.newest + 1} of the ${FORGED + 1} ledger rows naming this task are listed (the newest 200, the first 200 accepted, each turn's reply); left out: 4320 bad-token, 480 auth:from-mismatch. The rest, newest first: a2a-mailbridge ledger --task ${IDS.oldCompleted} --before ${oldestListed} --db ${store}\n`,
    );
  });

  it('--json lists the same rows and says what it left out', async () => {
    const r = await runCli(['show', IDS.oldCompleted, '--db', store, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const j = JSON.parse(r.stdout) as ShowJson;
    expect(j.ledger).toHaveLength(SHOWN_LEDGER.newest + 1);
    expect(j.ledger[0]).toMatchObject({ id: replyId, verdict: 'applied:done' });
    expect(j.ledgerOmitted).toEqual({ total: FORGED + 1, listed: SHOWN_LEDGER.newest + 1, omitted: 4800, byVerdict: { 'bad-token': 4320, 'auth:from-mismatch': 480 } });
    expect(j.timeline.filter((e) => e.kind === 'mail')).toHaveLength(SHOWN_LEDGER.newest + 1);
  });

  it('ledger --before pages on from the oldest row show listed', async () => {
    const j = JSON.parse((await runCli(['show', IDS.oldCompleted, '--db', store, '--json'])).stdout) as ShowJson;
    const before = j.ledger[1]!.id;
    const r = await runCli(['ledger', '--db', store, '--task', IDS.oldCompleted, '--before', String(before), '--limit', '3', '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as LedgerJson[]).map((l) => l.id)).toEqual([before - 1, before - 2, before - 3]);
    const bad = await runCli(['ledger', '--db', store, '--before', 'x']);
    expect([bad.status, bad.stderr]).toEqual([2, 'a2a-mailbridge: --before takes a whole number, 1 to 9007199254740991; got "x"\n']);
  });
});
