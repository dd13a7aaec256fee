import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V1Task } from '../../../src/a2a/wire.js';
import type { CheckSummary } from '../../../src/core/mail-check.js';
import { buildReplyMail } from '../../../src/demo/reply-mail.js';
import type { Envelope } from '../../../src/downlink/envelope.js';
import type { LedgerRow } from '../../../src/store/ledger.js';
import { MAX_HEADER_BLOCK_BYTES, MAX_HEADER_LINES, STAMP_PREFIX_BYTES } from '../../../src/uplink/gates.js';
import { AGENT_ADDRESS, AGENT_DOMAIN, PROVIDER } from '../../helpers/bridge-harness.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { imapRig, maildirRig, rigPerSuite } from '../../helpers/mailbox-rigs.js';

/**
 * Every input leaves a trace: mail tagged for a task that the bridge refuses shows on that task —
 * its ledger rows (`ledger --task`, `show`), the caller's status (GetTask), `status` — with a
 * verdict that says what happened, also when the mail cannot be read as a whole; and a copy of
 * mail judged before is a `duplicate`, whichever rule refused the first (docs/architecture.md,
 * "The gates"). On IMAP (a real Dovecot) and on a Maildir, checks started by the test.
 */

/**
 * `mail` with the fields `pad` moved below the sender's other fields (MailComposer writes extra
 * headers first): the Subject, and its tag, within the first 16 KiB, the padding after them. The
 * padding is not signed, so a DKIM signature still verifies.
 */
function padBelow(mail: Buffer, pad: string): Buffer {
  const end = mail.indexOf('\r\n\r\n');
  const fields = mail.subarray(0, end).toString('latin1').split(/\r\n(?![ \t])/);
  const moved = [...fields.filter((f) => !f.startsWith(pad)), ...fields.filter((f) => f.startsWith(pad))];
  return Buffer.concat([Buffer.from(moved.join('\r\n'), 'latin1'), mail.subarray(end)]);
}

/** `n` padding fields `X-Pad-<i>` of `chars` characters each. */
const padding = (n: number, chars: number): Record<string, string> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-Pad-${i}`, 'p'.repeat(chars)]));

/** A forgery of a reply to `envelope` whose header block runs past 16 KiB; the provider's stamp says dmarc=fail. */
async function heavyForgery(envelope: Envelope): Promise<Buffer> {
  const raw = await buildReplyMail({
    from: `Grok Agent <${AGENT_ADDRESS}>`, to: envelope.reply_to, subject: `Re: ${envelope.subject_tag}`, token: envelope.reply_token, status: 'done', answer: 'forged', headers: padding(400, 90),
    provider: { ...PROVIDER, fromHost: 'mx.evil.example', fromIp: '203.0.113.66', results: `dkim=none; spf=fail smtp.mailfrom=${AGENT_DOMAIN}; dmarc=fail (p=reject) header.from=${AGENT_DOMAIN}` },
  });
  return padBelow(raw, 'X-Pad-');
}

const statusOf = (task: V1Task): string => task.status.message?.parts?.[0]?.text ?? '';

let dovecot: DovecotHandle;
let folders = 0;
beforeAll(async () => {
  dovecot = await startDovecot();
});
afterAll(async () => {
  await dovecot?.stop();
});

const MAILBOX_TOML = 'check_interval_s = 3600\nmax_fetch_per_check = 5';
const KINDS = [
  ['IMAP (Dovecot)', () => imapRig(dovecot, `MT${++folders}`, MAILBOX_TOML)],
  ['Maildir', () => maildirRig(MAILBOX_TOML)],
] as const;

describe.each(KINDS)('mail tagged for a task leaves a trace on it, on %s', (_name, makeRig) => {
  const rig = rigPerSuite(makeRig);
  const store = () => rig().bridge.ctx.store;

  it.each([
    ['over 256 KiB', padding(3000, 100), 'too-large-header', /^no empty line ends the header block within its first 256 KiB/],
    [`over ${MAX_HEADER_LINES} lines`, padding(MAX_HEADER_LINES + 100, 4), 'too-large-header', new RegExp(`^the header block has \\d+ lines, over ${MAX_HEADER_LINES}`)],
  ])('a genuine reply whose header block is %s, its tag in the first 16 KiB: the row names the task, the caller sees the refusal, nothing more is read (was: task null)', async (_what, pad, verdict, reason) => {
    const t = await rig().newTask('Job whose reply has a huge header');
    const raw = padBelow(await rig().reply(t.envelope, 'The answer.', { headers: pad }), 'X-Pad-');
    expect(raw.indexOf(t.envelope.subject_tag)).toBeLessThan(STAMP_PREFIX_BYTES);
    expect(raw.indexOf('\r\n\r\n')).toBeGreaterThan(STAMP_PREFIX_BYTES);
    const [uid] = await rig().deliver([raw]);

    const check = await rig().bridge.checkNow();
    expect(check).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 1, onHeaders: 1, verdicts: { [verdict]: 1 } });
    // Read: the first 16 KiB, then the header block on to 256 KiB at most — as before; never the body.
    expect(check.bytes).toBeLessThanOrEqual(STAMP_PREFIX_BYTES + MAX_HEADER_BLOCK_BYTES);
    if (rig().kind === 'imap') expect(rig().wholeFetched()).not.toContain(uid);

    const rows = store().ledger.ofTask(t.id);
    expect(rows.map((r) => [r.verdict, r.agent])).toEqual([[verdict, 'grok']]);
    expect(rows[0]!.reason).toMatch(reason);
    // Tagged mail keeps its first bytes as evidence: of a header block that cannot be read, the 16 KiB its tag was read from (was: 64 KiB).
    const evidence = store().ledger.raw(rows[0]!.id)!;
    expect(evidence.length).toBeGreaterThan(0);
    expect(evidence.length).toBeLessThanOrEqual(STAMP_PREFIX_BYTES);
    expect(evidence.equals(raw.subarray(0, evidence.length))).toBe(true);

    const task = await rig().getTask(t.id);
    expect(task.status.state).toBe('TASK_STATE_WORKING');
    expect(statusOf(task)).toContain(`A reply for this task was refused by the bridge's gates (verdict ${verdict}, seen `);
    expect(store().overview.refusedForOpenTasks(1000).find((r) => r.taskId === t.id)).toMatchObject({ count: 1, lastVerdict: verdict });
  });

  it('a genuine reply with more than 1,000 MIME parts: a verdict that names the parser cap, on the task (was: no-token)', async () => {
    const t = await rig().newTask('Job whose reply has too many parts');
    const attachments = Array.from({ length: 1000 }, (_, i) => ({ filename: `f${i}.bin`, contentType: 'application/octet-stream', content: 'x' }));
    await rig().deliver([await rig().reply(t.envelope, 'The answer.', { attachments })]);

    const check = await rig().bridge.checkNow();
    expect(check).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 1, verdicts: { 'unparsed:parts': 1 } });
    const rows = store().ledger.ofTask(t.id);
    expect(rows.map((r) => r.verdict)).toEqual(['unparsed:parts']);
    expect(rows[0]!.reason).toBe('gate 9: the body was not read: the MIME parser stops at 1,000 MIME parts (Max allowed child nodes exceeded)');
    const task = await rig().getTask(t.id);
    expect(task.status.state).toBe('TASK_STATE_WORKING');
    expect(statusOf(task)).toContain('A reply for this task was refused by the bridge\'s gates (verdict unparsed:parts, seen ');
  });

  it('replays of an applied reply with 300 KB of unsigned fields after its Subject (its Message-ID past the first 16 KiB): duplicates by signature, at most 16 KiB of evidence each, not counted on the task (was: too-large-header, 64 KiB each, counted)', async () => {
    const t = await rig().newTask('Job whose reply is replayed with a huge header');
    const genuine = await rig().reply(t.envelope, 'The answer.');
    await rig().deliver([genuine]);
    expect(await rig().bridge.checkNow()).toMatchObject<Partial<CheckSummary>>({ ok: true, verdicts: { 'applied:done': 1 } });
    const afterSubject = genuine.indexOf('\r\n', genuine.indexOf('\r\nSubject:') + 2) + 2;
    // Each replay padded differently (no digest can tell them), 3,000 fields of 100 bytes.
    const replays = [1, 2, 3].map((n) => Buffer.concat([genuine.subarray(0, afterSubject), Buffer.from(Object.entries(padding(3000, 90)).map(([k, v]) => `${k}-${n}: ${v}\r\n`).join('')), genuine.subarray(afterSubject)]));
    const first = replays[0]!;
    expect(first.indexOf(t.envelope.subject_tag)).toBeLessThan(STAMP_PREFIX_BYTES);
    expect(first.indexOf('\r\nDKIM-Signature:')).toBeLessThan(STAMP_PREFIX_BYTES);
    expect(first.indexOf('\r\nMessage-ID:')).toBeGreaterThan(STAMP_PREFIX_BYTES);
    expect(first.indexOf('\r\n\r\n')).toBeGreaterThan(MAX_HEADER_BLOCK_BYTES);
    await rig().deliver(replays);

    const check = await rig().bridge.checkNow();
    expect(check).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 3, onHeaders: 3, verdicts: { duplicate: 3 } });
    const rows = store().ledger.ofTask(t.id).filter((r) => r.verdict !== 'applied:done');
    expect(rows.map((r) => r.verdict)).toEqual(['duplicate', 'duplicate', 'duplicate']);
    for (const r of rows) {
      expect(r.reason).toMatch(/^gate 1: a DKIM signature of mail authenticated before \(ledger #\d+\), in the first bytes of a header block that cannot be read as one: a replay$/);
      // The store grows by at most the 16 KiB read for the tag, per replay (was: 64 KiB).
      const kept = store().ledger.raw(r.id)!;
      expect(kept.length).toBeLessThanOrEqual(STAMP_PREFIX_BYTES);
      expect(replays.some((x) => kept.equals(x.subarray(0, kept.length)))).toBe(true);
    }
    expect(store().ledger.refusedRepliesOf(t.id, 0)).toBeUndefined();
    expect(store().tasks.get(t.id)?.state).toBe('COMPLETED');
  });

  it('copies of mail refused on the provider stamp, and of mail whose header block cannot be read, are duplicates: the caller hears of each mail once (was: refused again)', async () => {
    const t = await rig().newTask('Job with copies of refused mail');
    const forgery = await heavyForgery(t.envelope);
    expect(forgery.indexOf('\r\n\r\n')).toBeGreaterThan(STAMP_PREFIX_BYTES);
    const huge = padBelow(await rig().reply(t.envelope, 'The answer.', { headers: padding(3000, 100) }), 'X-Pad-');
    // Two copies of each in one check, a third of each in the next.
    await rig().deliver([forgery, forgery, huge, huge]);
    const first = await rig().bridge.checkNow();
    expect(first).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 4, onHeaders: 4, verdicts: { 'auth:dmarc-fail': 1, 'too-large-header': 1, duplicate: 2 } });
    await rig().deliver([forgery, huge]);
    const second = await rig().bridge.checkNow();
    expect(second).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 2, onHeaders: 2, verdicts: { duplicate: 2 } });

    const rows = store().ledger.ofTask(t.id);
    const byVerdict = (v: string): LedgerRow[] => rows.filter((r) => r.verdict === v);
    expect(rows).toHaveLength(6);
    expect(byVerdict('duplicate')).toHaveLength(4);
    for (const r of byVerdict('duplicate')) expect(r.reason).toMatch(/^gate 1: the same raw bytes are already in the ledger/);
    const task = await rig().getTask(t.id);
    expect(statusOf(task)).toContain("2 replies for this task were refused by the bridge's gates (the last: verdict ");
    expect(store().overview.refusedForOpenTasks(1000).find((r) => r.taskId === t.id)).toMatchObject({ count: 2 });
  });
});
