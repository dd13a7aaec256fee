import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckSummary } from '../../../src/core/mail-check.js';
import { buildReplyMail } from '../../../src/demo/reply-mail.js';
import { MAX_HEADER_LINES, STAMP_PREFIX_BYTES } from '../../../src/uplink/gates.js';
import { NARROWING_READ_BYTES } from '../../../src/uplink/maildir-narrowing.js';
import { AGENT_ADDRESS, AGENT_DOMAIN, hex, PROVIDER } from '../../helpers/bridge-harness.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { forged, imapRig, maildirRig, rigPerSuite } from '../../helpers/mailbox-rigs.js';

/**
 * A check reads header blocks first (docs/architecture.md, "The gates"), on IMAP (a real Dovecot)
 * and on a Maildir alike: a flood of forged tagged mail is refused on its header blocks and cannot
 * hold back a genuine reply queued behind it; replies that pass the header gates but not the body
 * budget wait for the next check ahead of newer mail, and the watermark passes no UID before its
 * verdict, across a restart; every hostile shape of header block leaves a ledger row saying why.
 * Every check here is started by the test (`Bridge.checkNow`): nothing else checks (interval 1 h).
 */

let dovecot: DovecotHandle;
let folders = 0;
beforeAll(async () => {
  dovecot = await startDovecot();
});
afterAll(async () => {
  await dovecot?.stop();
});

const KINDS = [
  ['IMAP (Dovecot)', () => imapRig(dovecot, `HF${++folders}`)],
  ['Maildir', () => maildirRig()],
] as const;

describe.each(KINDS)('header blocks first, on %s', (_name, makeRig) => {
  const rig = rigPerSuite(makeRig);
  const store = () => rig().bridge.ctx.store;

  it('150 forged tagged mails queued before a genuine reply: refused on their header blocks, and the reply is applied on the second check', async () => {
    const t = await rig().newTask('Job behind a flood');
    const flood = await Promise.all(Array.from({ length: 150 }, (_, i) => forged(t.envelope, i)));
    const uids = await rig().deliver([...flood, await rig().reply(t.envelope, 'The genuine answer.')]);

    const first = await rig().bridge.checkNow();
    expect(first).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 100, onHeaders: 100, verdicts: { 'auth:dmarc-fail': 100 }, more: true });
    expect(store().tasks.get(t.id)!.state).toBe('WORKING');
    const second = await rig().bridge.checkNow();
    expect(second).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 51, onHeaders: 50, verdicts: { 'auth:dmarc-fail': 50, 'applied:done': 1 }, more: false });
    expect(store().tasks.get(t.id)!.state).toBe('COMPLETED');

    const rows = store().ledger.ofTask(t.id);
    expect(rows.map((r) => r.verdict)).toEqual([...Array<string>(150).fill('auth:dmarc-fail'), 'applied:done']);
    // A forgery keeps its header block as evidence, never its body (it was never read).
    const evidence = store().ledger.raw(rows[0]!.id)!;
    expect(evidence.equals(flood[0]!.subarray(0, evidence.length))).toBe(true);
    expect(evidence.toString('latin1').endsWith('\r\n\r\n')).toBe(true);
    if (rig().kind === 'imap') {
      expect(rig().wholeFetched()).toEqual([uids.at(-1)]); // only the reply crossed the wire whole
      expect(store().mailbox.state(rig().bridge.ctx.mailbox.folder).lastUid).toBe(uids.at(-1));
    }
  });

  it('agent-signed mail tagged for tasks that do not exist, queued before a genuine reply: refused unknown-task on its header block, never read whole, and the reply is applied on the first check (attack review 6, F2)', async () => {
    const t = await rig().newTask('Job behind signed junk');
    // The agent's own auto-replies: signed with its key, stamped dkim=pass, tagged for tasks never issued.
    const junk = await Promise.all(
      Array.from({ length: 5 }, () => {
        const id = randomUUID();
        return rig().reply({ ...t.envelope, task_id: id, subject_tag: t.envelope.subject_tag.replace(t.id, id) }, 'I am away; this is an automatic reply.');
      }),
    );
    const wholeBefore = rig().wholeFetched()?.length ?? 0;
    const uids = await rig().deliver([...junk, await rig().reply(t.envelope, 'The genuine answer.')]);

    // max_fetch_per_check is 2: were the junk read whole, the reply would wait for the third check.
    const first = await rig().bridge.checkNow();
    expect(first).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 6, onHeaders: 5, verdicts: { 'unknown-task': 5, 'applied:done': 1 }, more: false });
    expect(store().tasks.get(t.id)!.state).toBe('COMPLETED');
    if (rig().kind === 'imap') expect(rig().wholeFetched()!.slice(wholeBefore)).toEqual([uids.at(-1)]);
  });

  it('replies beyond max_fetch_per_check wait for the next check ahead of newer mail, across a restart; the watermark passes none before its verdict', async () => {
    const [a, b, c, d] = [await rig().newTask('Job A'), await rig().newTask('Job B'), await rig().newTask('Job C'), await rig().newTask('Job D')];
    const mails = [
      await rig().reply(a.envelope, 'Answer A.'),
      await forged(a.envelope, 1),
      await rig().reply(b.envelope, 'Answer B.'),
      await forged(b.envelope, 2),
      await rig().reply(c.envelope, 'Answer C.'),
      await forged(c.envelope, 3),
    ];
    const uids = await rig().deliver(mails);
    const first = await rig().bridge.checkNow();
    // Three forgeries on their header blocks; two replies read whole (the budget); C waits.
    expect(first).toMatchObject<Partial<CheckSummary>>({ fetched: 5, onHeaders: 3, verdicts: { 'auth:dmarc-fail': 3, 'applied:done': 2 }, more: true });
    expect([a, b, c].map((x) => store().tasks.get(x.id)!.state)).toEqual(['COMPLETED', 'COMPLETED', 'WORKING']);
    if (rig().kind === 'imap') {
      // The forgery after C has its verdict, C has not: the watermark stops right before C.
      expect(store().ledger.ofTask(c.id).map((r) => r.verdict)).toEqual(['auth:dmarc-fail']);
      expect(store().mailbox.state(rig().bridge.ctx.mailbox.folder).lastUid).toBe(uids[4]! - 1);
    }

    await rig().restart();
    const newer = await rig().deliver([await rig().reply(d.envelope, 'Answer D.')]);
    const second = await rig().bridge.checkNow();
    expect(second).toMatchObject<Partial<CheckSummary>>({ fetched: 2, onHeaders: 0, verdicts: { 'applied:done': 2 }, more: false });
    const applied = [c, d].map((x) => store().ledger.ofTask(x.id).find((r) => r.verdict === 'applied:done')!.id);
    expect(applied[0]).toBeLessThan(applied[1]!); // C before D: the one that waited comes first
    for (const x of [a, b, c, d]) expect(store().ledger.ofTask(x.id).filter((r) => r.verdict === 'applied:done')).toHaveLength(1);
    if (rig().kind === 'imap') expect(store().mailbox.state(rig().bridge.ctx.mailbox.folder).lastUid).toBe(newer[0]);
    expect((await rig().bridge.checkNow()).fetched).toBe(0);
  });

  it('forgeries of 200 KB header blocks are refused on the provider stamp with only their first 16 KiB read; one whose stamp runs past 16 KiB with a dkim result per added DKIM-Signature is refused there by gate 3, one whose stamp runs past 16 KiB otherwise is read on and gets the verdict the whole judge gives; the reply behind them is applied on the first check', async () => {
    const t = await rig().newTask('Job behind heavy forgeries');
    const padding = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`X-Pad-${i}`, 'p'.repeat(90)]));
    const heavy = async (results: string): Promise<Buffer> => {
      const raw = await buildReplyMail({
        from: `Grok Agent <${AGENT_ADDRESS}>`, to: t.envelope.reply_to, subject: `Re: ${t.envelope.subject_tag}`, token: t.envelope.reply_token, status: 'done', answer: 'forged', headers: padding,
        provider: { ...PROVIDER, fromHost: 'mx.evil.example', fromIp: '203.0.113.66', results },
      });
      // The padding under the sender's other fields (MailComposer writes it first), where the Maildir narrowing need not read.
      const end = raw.indexOf('\r\n\r\n');
      const fields = raw.subarray(0, end).toString('latin1').split(/\r\n(?![ \t])/);
      return Buffer.concat([Buffer.from([...fields.filter((f) => !f.startsWith('X-Pad-')), ...fields.filter((f) => f.startsWith('X-Pad-'))].join('\r\n'), 'latin1'), raw.subarray(end)]);
    };
    const dmarcFail = `dkim=none; spf=fail smtp.mailfrom=${AGENT_DOMAIN}; dmarc=fail (p=reject) header.from=${AGENT_DOMAIN}`;
    const flood = await Promise.all(Array.from({ length: 30 }, () => heavy(dmarcFail)));
    // The provider's own results run past 16 KiB, a result per DKIM-Signature the sender added: the border is not
    // in the prefix, but the stamp already lists more signatures than gate 3 lets through (attack review 6, F4).
    const longStamp = await heavy(`${Array.from({ length: 400 }, (_, i) => `dkim=fail header.d=s${i}.example header.b=AAAAAAAA`).join('; ')}; ${dmarcFail}`);
    // A stamp that runs past 16 KiB with other results: undecided on the prefix, read on.
    const longOther = await heavy(`${Array.from({ length: 400 }, (_, i) => `x-note${i}=pass policy.n=${'n'.repeat(20)}`).join('; ')}; ${dmarcFail}`);
    for (const long of [longStamp, longOther]) expect(long.indexOf('Received:')).toBeGreaterThan(STAMP_PREFIX_BYTES);
    const uids = await rig().deliver([...flood, longStamp, longOther, await rig().reply(t.envelope, 'The genuine answer.')]);

    const first = await rig().bridge.checkNow();
    expect(first).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 33, onHeaders: 32, verdicts: { 'auth:dmarc-fail': 31, 'auth:duplicate-header': 1, 'applied:done': 1 }, more: false });
    expect(store().tasks.get(t.id)!.state).toBe('COMPLETED');
    // Read: 32 prefixes, the other long stamp's header block read on, the reply's header block and the reply.
    const blockOf = (raw: Buffer): number => raw.indexOf('\r\n\r\n') + 4;
    // (A Maildir's narrowing reads both long stamps' blocks on too, 64 KiB of each: their From lies past 16 KiB.)
    const readOn = (rig().kind === 'maildir' ? 2 * NARROWING_READ_BYTES : 0) + blockOf(longOther);
    expect(first.bytes).toBeGreaterThanOrEqual(32 * STAMP_PREFIX_BYTES + readOn);
    expect(first.bytes).toBeLessThan(32 * STAMP_PREFIX_BYTES + readOn + 64 * 1024);
    const rows = store().ledger.ofTask(t.id);
    const onStamp = rows.filter((r) => r.reason.includes("read on the provider's stamp"));
    expect(onStamp).toHaveLength(30);
    // (Its row names no task: the Subject lies past the 16 KiB the provider's results fill.)
    const [signatures, ...others] = store().ledger.query({ verdict: 'auth:duplicate-header', limit: 10 }).filter((r) => r.reason.includes('cut short by the prefix'));
    expect(others).toEqual([]);
    expect(signatures!.reason).toMatch(/^gate 3: at least \d+ DKIM-Signature headers \(the provider's Authentication-Results #0, cut short by the prefix, lists \d+ dkim results, one per signature\); at most 8 are verified \(read on the provider's stamp: /);
    expect(store().ledger.raw(signatures!.id)).toBeNull(); // no task named, no evidence kept (as for untagged mail)
    // Evidence: the prefix read, never more.
    expect(store().ledger.raw(onStamp[0]!.id)!.equals(flood[0]!.subarray(0, STAMP_PREFIX_BYTES))).toBe(true);
    const long = rows.find((r) => r.verdict === 'auth:dmarc-fail' && !r.reason.includes("read on the provider's stamp"))!;
    expect(long.reason).toMatch(/^gate 6: trusted dmarc=fail$/);
    if (rig().kind === 'imap') {
      const fetches = rig().imapCommands().filter((c) => /UID FETCH/.test(c));
      expect(fetches.some((c) => c.includes('BODY.PEEK[HEADER]<0.16384>'))).toBe(true);
      // Read on (`<0.262144>`): the other long stamp's header block alone; read whole: the reply alone.
      expect(fetches.filter((c) => c.includes('BODY.PEEK[HEADER]<0.262144>')).map((c) => Number(c.split(' ')[3]))).toEqual([uids[31]]);
      expect(rig().wholeFetched()!.filter((u) => uids.includes(u))).toEqual([uids[32]]);
    }
  });

  it('a replay of an applied reply padded with 2,000 DKIM-Signature fields under the stamp: read on (the stamp holds the aligned pass), refused by gate 3 on its header block without a ledger read per signature; the task stays COMPLETED', async () => {
    const t = await rig().newTask('Job replayed with padded signatures');
    const genuine = await rig().reply(t.envelope, 'The genuine answer.');
    await rig().deliver([genuine]);
    expect((await rig().bridge.checkNow()).verdicts).toEqual({ 'applied:done': 1 });
    // Below the provider's stamp (its A-R and Received, the two top fields) the sender's fields begin:
    // 2,000 distinct signatures of other domains there, the genuine signature after them.
    const stamp = genuine.indexOf('\r\nDKIM-Signature:') + 2;
    const pads = Array.from({ length: 2000 }, (_, i) => `DKIM-Signature: v=1; a=rsa-sha256; d=o${i}.example; s=s; h=from; bh=AAAA; b=${Buffer.from(`sig ${i}`).toString('base64')}\r\n`).join('');
    const replay = Buffer.concat([genuine.subarray(0, stamp), Buffer.from(pads), genuine.subarray(stamp)]);
    expect(replay.indexOf('\r\n\r\n')).toBeGreaterThan(STAMP_PREFIX_BYTES);
    await rig().deliver([replay]);

    const check = await rig().bridge.checkNow();
    expect(check).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 1, onHeaders: 1, verdicts: { 'auth:duplicate-header': 1 } });
    const rows = store().ledger.ofTask(t.id);
    expect(rows.map((r) => r.verdict)).toEqual(['applied:done', 'auth:duplicate-header']);
    expect(rows[1]!.reason).toBe('gate 3: 2001 DKIM-Signature headers; at most 8 are verified');
    expect(store().tasks.get(t.id)!.state).toBe('COMPLETED');
  });

  it('every hostile header block leaves a ledger row that says why', async () => {
    const t = await rig().newTask('Job with hostile mail');
    const tag = t.envelope.subject_tag;
    const head = `From: Grok Agent <${AGENT_ADDRESS}>\r\nTo: me@bridge.test\r\nSubject: Re: ${tag}\r\nDate: ${new Date().toUTCString()}\r\nMessage-ID: <${hex(8)}@agent.example>\r\n`;
    const received = `Received: from mx.evil.example (mx.evil.example [203.0.113.66]) by ${PROVIDER.mxHost}; ${new Date().toUTCString()}\r\n`;
    const body = '\r\nreply_token: x\r\nstatus: done\r\n---\r\nA.\r\n';
    const shapes: [string, Buffer, string][] = [
      // The tag lies past the first 256 KiB: the Maildir narrowing cannot see it, the row says why.
      ['a header block over 256 KiB', Buffer.from(`X-Pad: ${'a'.repeat(300 * 1024)}\r\n${head}${body}`), 'too-large-header'],
      ['a header block of 10 MB', Buffer.from(`${head}X-Pad: ${'a b '.repeat(2_621_440)}\r\n${body}`), 'too-large-header'],
      ['too many header lines', Buffer.from(`${head}X-Fold: x\r\n${' y\r\n'.repeat(MAX_HEADER_LINES)}${body}`), 'too-large-header'],
      ['CR-only line ends', Buffer.from(`${head}${body}`.replaceAll('\r\n', '\r')), 'unreadable:line-ends'],
      ['a bare CR in a field', Buffer.from(`${head}X-Note: a\rb\r\n${body}`), 'unreadable:line-ends'],
      ['8-bit bytes that are not UTF-8', Buffer.concat([Buffer.from(head), Buffer.from([0x58, 0x3a, 0x20, 0xff, 0xfe, 0x80, 0x0d, 0x0a]), Buffer.from(body)]), 'unreadable:8bit'],
      ['no empty line before a body', Buffer.from(head), 'unreadable:no-body'],
      // A NUL is judged like any byte (RFC 5322's obsolete text allows it); Dovecot hands it back
      // as 0x80, which is not UTF-8.
      ['a NUL in an unsigned field', Buffer.from(`${received}${head}X-Mailer: a\0b\r\n${body}`), rig().kind === 'imap' ? 'unreadable:8bit' : 'auth:no-trusted-results'],
      ['a line that is neither a field nor a continuation', Buffer.from(`${head}not a header line\r\n${body}`), 'auth:duplicate-header'],
    ];
    // CR-only with a Received line first: Dovecot's SEARCH sees no From or Subject in it (the
    // server's pre-filter: such mail is not listed, like the person's other mail); the Maildir
    // narrowing reads bare CRs as line ends.
    if (rig().kind === 'maildir') shapes.push(['CR-only line ends, Received first', Buffer.from(`${received}${head}${body}`.replaceAll('\r\n', '\r')), 'unreadable:line-ends']);
    const before = store().ledger.query({ limit: 10_000 }).length;
    await rig().deliver(shapes.map(([, raw]) => raw));
    const summary = await rig().bridge.checkNow();
    expect(summary).toMatchObject({ ok: true, fetched: shapes.length, onHeaders: shapes.length });
    const all = store().ledger.query({ limit: 10_000 });
    // Recorded in two steps (header blocks that end within their first 16 KiB, then those read on),
    // so compared by source order: the order they were delivered in.
    const rows = all.slice(0, all.length - before).sort((a, b) => (rig().kind === 'imap' ? Number(a.source.split(':').at(-1)) - Number(b.source.split(':').at(-1)) : (a.receivedAt ?? 0) - (b.receivedAt ?? 0)));
    expect(rows.map((r) => [r.size, r.verdict])).toEqual(shapes.map(([, raw, verdict]): [unknown, string] => [rig().kind === 'imap' ? (expect.any(Number) as unknown) : raw.length, verdict]));
    expect(store().tasks.get(t.id)!.state).toBe('WORKING');
  });
});
