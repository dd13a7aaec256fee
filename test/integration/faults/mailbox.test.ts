/**
 * Mailbox faults. None may fail an A2A call: every poll answers HTTP 200 with the task's current
 * state, its status text says the mailbox is unreachable and since when, and GET /health shows the
 * last success, the last error and since when. Faults come from a TCP proxy in front of the real
 * Dovecot (refuse, cut mid-FETCH, come back on the same port), a silent server, a wrong password
 * file and TLS against a plaintext port. Every test reads its own folder, so watermarks and ledgers
 * are its own. (The bounded big folder is in mailbox-big-folder.test.ts.)
 */
import { chmodSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ImapMailbox, RECONNECT_EVERY_MS } from '../../../src/uplink/imap-mailbox.js';
import { AGENT_ADDRESS } from '../../helpers/bridge-harness.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { unfence } from '../../helpers/agent-text.js';
import { healthOf, shown } from './caller-view.js';
import { startSilentServer } from './imap-faults.js';
import { Summary } from './summary.js';
import { call, expectUnreachable, mailboxFaults, toSecond, working } from './mailbox-faults.js';

let dovecot: DovecotHandle;
const cleanup: (() => Promise<void>)[] = [];
const summary = new Summary('Mailbox faults (test/integration/faults/mailbox.test.ts)');

beforeAll(async () => {
  dovecot = await startDovecot();
});
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});
afterAll(async () => {
  await dovecot?.stop();
  summary.print();
});

const { harness, proxy, messageFile } = mailboxFaults(() => dovecot, cleanup);

describe('mailbox faults never fail an A2A call', () => {
  it('connection refused: the poll answers WORKING with "unreachable since"; once the server is back the waiting reply is applied', async () => {
    const p = await proxy();
    const h = await harness({ dovecot: { ...dovecot, port: p.port } });
    const firstSuccess = toSecond((await healthOf(h)).mailbox.lastSuccessAt)!;
    expect(firstSuccess).toMatch(/Z$/);
    const { ctx, id } = await working(h);

    await p.setMode('refuse');
    const down1 = await expectUnreachable(h, ctx, new RegExp(`^IMAP connection to 127\\.0\\.0\\.1:${p.port} failed: ECONNREFUSED$`));
    expect(down1.lastSuccess).toBe(firstSuccess);

    // The outage goes on: "since" stays at its start while later checks keep failing.
    h.advance(90_000);
    await dovecot.append(await h.reply(h.envelope(1), { answer: 'Done while the mailbox was away.', date: new Date(h.app.bridge.ctx.now()) }), { folder: h.folder });
    const down2 = await expectUnreachable(h, ctx, /ECONNREFUSED/);
    expect(down2.since).toBe(down1.since);
    expect(Date.parse(down2.health.mailbox.lastCheckAt!)).toBeGreaterThan(Date.parse(down1.since) + 60_000);

    await p.setMode('pass');
    const back = await call(h, 'status', ctx);
    expect(back.task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(unfence(shown(back.task))).toBe('[UNTRUSTED — grok reply, verify before acting]\nDone while the mailbox was away.');
    const health = await healthOf(h);
    expect(health.status).toBe('ok');
    expect(health.mailbox).toMatchObject({ lastError: null, errorSince: null });
    expect(Date.parse(health.mailbox.lastSuccessAt!)).toBeGreaterThan(Date.parse(firstSuccess));
    expect(h.app.bridge.ctx.store.ledger.ofTask(id).map((l) => l.verdict)).toEqual(['applied:done']);
    expect(h.receiver.requests).toHaveLength(1);
    summary.add(
      'connection refused (nothing listens on the IMAP port)',
      `polls answer 200 WORKING in ≤ ${Math.round(Math.max(down1.ms, down2.ms))} ms with "The mailbox is unreachable since ${'<start>'}: IMAP connection to 127.0.0.1:<port> failed: ECONNREFUSED (last successful check <t>)…"; "since" stays at the outage's start across checks; /health degraded with lastError/errorSince/lastSuccessAt`,
    );
    summary.add('recovery once the server is back', 'the next poll checks, applies the reply that arrived during the outage (applied:done, COMPLETED with the artifact); /health ok, lastError and errorSince cleared');
  });

  it('login failure (wrong password file): WORKING with "IMAP login failed", never the password', async () => {
    const wrong = 'wrong-password-4711';
    const h = await harness({ dovecot: { ...dovecot, password: wrong } });
    const { ctx } = await working(h);
    const down = await expectUnreachable(h, ctx, new RegExp(`^IMAP login failed for ${dovecot.user}$`));
    expect(down.lastSuccess).toBeNull();
    expect(down.health.mailbox.lastSuccessAt).toBeNull();
    expect(down.text).not.toContain(wrong);
    expect(JSON.stringify(down.health)).not.toContain(wrong);
    summary.add('login failure (wrong password file)', `200 WORKING, "The mailbox is unreachable since <t>: IMAP login failed for ${dovecot.user}; …" (no last success), /health degraded, lastSuccessAt null; the password appears nowhere`);
  });

  it('TLS failure (tls = true against a plaintext port): WORKING with "IMAP TLS … failed"', async () => {
    const h = await harness({ imapToml: 'tls = true' });
    const { ctx } = await working(h);
    const down = await expectUnreachable(h, ctx, new RegExp(`^IMAP TLS with 127\\.0\\.0\\.1:${dovecot.port} failed: `));
    const error = down.health.mailbox.lastError as string;
    summary.add('TLS failure (tls = true on the plaintext port)', `200 WORKING in ${Math.round(down.ms)} ms, /health degraded, status "unreachable since <t>: ${JSON.stringify(error.replace(String(dovecot.port), '<port>')).slice(1, -1)}"`);
    // The status text is one readable line for a person: the cause, not OpenSSL's internal error dump.
    expect(error, 'MailboxError tls message holds the raw OpenSSL error string').not.toMatch(/[\r\n]/);
    expect(error).not.toMatch(/deps\/openssl|ssl3_get_record|:error:[0-9A-F]{8}:/);
    expect(error).toMatch(/wrong version number|ERR_SSL_WRONG_VERSION_NUMBER/i);
  });

  it('a server that accepts and never greets: polls stay bounded by check_wait_ms, then show the timeout', async () => {
    const silent = await startSilentServer();
    cleanup.push(() => silent.close());
    const h = await harness({ dovecot: { ...dovecot, port: silent.port }, imapToml: 'timeout_s = 1', mailboxToml: 'check_wait_ms = 300' });
    // The start-up check already timed out (the harness waited for it); one more stalls now.
    const { ctx } = await working(h);
    const down = await expectUnreachable(h, ctx, new RegExp(`^IMAP server 127\\.0\\.0\\.1:${silent.port} did not answer within 1000 ms \\(connect\\)$`));
    expect(down.ms).toBeLessThan(900); // bounded by check_wait_ms (300 ms), not by the 1 s IMAP timeout
    const polls: number[] = [];
    for (let i = 0; i < 3; i++) polls.push((await expectUnreachable(h, ctx, /did not answer within 1000 ms/)).ms);
    for (const ms of polls) expect(ms).toBeLessThan(900);
    await h.app.bridge.idle();
    expect(silent.accepted()).toBeGreaterThanOrEqual(2);
    summary.add('a server that stalls (accepts, never greets; timeout_s = 1, check_wait_ms = 300)', `every poll 200 WORKING in ≤ ${Math.round(Math.max(down.ms, ...polls))} ms (the check goes on in the background), status "unreachable since <t>: IMAP server 127.0.0.1:<port> did not answer within 1000 ms (connect)"`);
  });

  it('a connection dropped mid-FETCH: nothing recorded for the message, WORKING with the error; applied once the connection holds', async () => {
    const p = await proxy();
    const h = await harness({ dovecot: { ...dovecot, port: p.port } });
    const { ctx, id } = await working(h);
    await dovecot.append(await h.reply(h.envelope(1), { answer: 'Survives a cut connection.' }), { folder: h.folder });

    await p.setMode('drop-on-fetch');
    // The mode holds for new connections: the bridge's next check connects afresh (the kept one is too old).
    h.advance(RECONNECT_EVERY_MS);
    const down = await expectUnreachable(h, ctx, /./);
    expect(p.stats.dropped).toBeGreaterThanOrEqual(1);
    expect(h.imapCommands.some((c) => /UID FETCH .*BODY\.PEEK\[\]/.test(c))).toBe(true);
    expect(h.app.bridge.ctx.store.ledger.ofTask(id)).toEqual([]);
    expect(h.app.bridge.ctx.store.mailbox.state(h.folder).lastUid).toBe(0);

    await p.setMode('pass');
    const back = await call(h, 'status', ctx);
    expect(back.task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(shown(back.task)).toContain('Survives a cut connection.');
    expect(h.app.bridge.ctx.store.ledger.ofTask(id).map((l) => l.verdict)).toEqual(['applied:done']);
    expect(h.app.bridge.ctx.store.replies.ofTask(id)).toHaveLength(1);
    summary.add('connection dropped mid-FETCH (proxy cuts inside the BODY.PEEK[] literal)', `200 WORKING, "unreachable since <t>: ${down.health.mailbox.lastError!.replace(String(p.port), '<port>')}"; no ledger row, watermark unchanged; next poll with the connection intact → applied:done once, COMPLETED, 1 artifact`);
  });

  it('a message the server cannot FETCH: recorded unreadable:fetch, the reply behind it applied, the watermark past both', async () => {
    const h = await harness();
    const db = () => h.app.bridge.ctx.store;
    const t = await working(h);
    const broken = await dovecot.append(await h.reply(h.envelope(t.n), { answer: 'Never readable.' }), { folder: h.folder });
    // Dovecot caches the header fields a SEARCH reads (here: a read-only pass of our own reader),
    // so only the FETCH of the broken message needs its file, made unreadable for the mail user.
    const reader = new ImapMailbox({ ...h.config.mailbox.imap!, folder: h.folder });
    const searched = await reader.check({ watermark: { uidValidity: null, lastUid: 0 }, fromAddresses: [AGENT_ADDRESS], subjectContains: ['[GROK:'], maxFetch: 50, maxMessageBytes: 1 << 20 });
    expect(searched.messages).toHaveLength(1);
    chmodSync(messageFile(h.folder, 'Never readable.'), 0o000);
    const genuine = await dovecot.append(await h.reply(h.envelope(t.n), { answer: 'Read past the broken one.' }), { folder: h.folder });

    const done = await call(h, 'status', t.ctx);
    expect(done.task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(shown(done.task)).toContain('Read past the broken one.');
    const rows = db().ledger.query({ limit: 10 }).filter((l) => l.source.startsWith(`imap:${h.folder}:`)).reverse();
    expect(rows.map((l) => [Number(l.source.split(':').at(-1)), l.verdict])).toEqual([
      [broken, 'unreadable:fetch'],
      [genuine, 'applied:done'],
    ]);
    expect(rows[0]!.reason).toMatch(/^IMAP FETCH of UID \d+ in F\d+ refused twice: BYE FETCH failed: Internal error occurred/);
    expect(db().mailbox.state(h.folder).lastUid).toBe(genuine);
    const applied = await healthOf(h);
    expect(applied.status).toBe('ok');
    expect(applied.mailbox.lastVerdict).toBe('applied:done');
    // A later check that finds nothing new writes its own line; the mail recorded last stays shown.
    await h.app.bridge.checkNow();
    const after = await healthOf(h);
    expect(after.mailbox.lastResult).toMatch(/^ok, 0 new messages/);
    expect(after.mailbox).toMatchObject({ lastVerdict: 'applied:done', lastRecordedAt: applied.mailbox.lastRecordedAt });
    summary.add('a message file Dovecot cannot open (FETCH answered with BYE)', `its UID fetched alone twice on fresh connections, then recorded unreadable:fetch ("${rows[0]!.reason.replace(/ \[\d{4}-[^\]]*\]/, '')}"); the reply behind it applied:done in the same check; watermark at UID ${genuine}; /health ok`);
  });

  it('UIDVALIDITY change: the folder is rescanned, the already-applied reply is a duplicate, the new reply is applied', async () => {
    const h = await harness();
    const db = () => h.app.bridge.ctx.store;
    const a = await working(h);
    const replyA = await h.reply(h.envelope(a.n), { answer: 'Answer A.' });
    await dovecot.append(replyA, { folder: h.folder });
    expect((await call(h, 'status', a.ctx)).task.status.state).toBe('TASK_STATE_COMPLETED');
    const v1 = String(await dovecot.uidValidity(h.folder));
    expect(db().mailbox.state(h.folder)).toMatchObject({ uidValidity: v1, lastUid: 1 });

    await dovecot.deleteFolder(h.folder);
    await dovecot.createFolder(h.folder);
    const v2 = String(await dovecot.uidValidity(h.folder));
    expect(v2).not.toBe(v1);
    const b = await working(h);
    const envA = h.envelope(a.n);
    // The same bytes again, a re-signed copy with the same Message-ID, and B's genuine reply.
    const messageIdA = /^Message-ID: (.*)$/im.exec(replyA.toString('latin1'))![1]!.trim();
    await dovecot.append(replyA, { folder: h.folder });
    await dovecot.append(await h.reply(envA, { answer: 'Answer A, sent again.', messageId: messageIdA }), { folder: h.folder });
    await dovecot.append(await h.reply(h.envelope(b.n), { answer: 'Answer B.' }), { folder: h.folder });

    const done = await call(h, 'status', b.ctx);
    expect(done.task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(shown(done.task)).toContain('Answer B.');
    expect(db().mailbox.state(h.folder)).toMatchObject({ uidValidity: v2, lastUid: 3 });
    const ledgerA = db().ledger.ofTask(a.id);
    expect(ledgerA.map((l) => [l.source.split(':').slice(2).join(':'), l.verdict])).toEqual([
      [`${v1}:1`, 'applied:done'],
      [`${v2}:1`, 'duplicate'],
      [`${v2}:2`, 'duplicate'],
    ]);
    // The same bytes are known on their header block, by the signature and Message-ID of the
    // applied reply (gate 1), before the body is read; the re-signed copy at gate 8a.
    expect(ledgerA[1]!.reason).toMatch(/^gate 1: the DKIM signature and Message-ID/);
    expect(ledgerA[2]!.reason).toMatch(/^gate 8a: Message-ID/);
    expect(db().ledger.ofTask(b.id).map((l) => l.verdict)).toEqual(['applied:done']);
    expect(db().replies.ofTask(a.id)).toHaveLength(1);
    expect(db().events.of(a.id).filter((e) => e.toState === 'COMPLETED')).toHaveLength(1);
    const taskA = (await call(h, 'status', a.ctx)).task;
    expect(shown(taskA)).toContain('Answer A.');
    summary.add(
      'UIDVALIDITY change (folder deleted and recreated)',
      `watermark reset to the new UIDVALIDITY and the folder rescanned from UID 1: the re-appended applied reply → duplicate (${ledgerA[1]!.reason}), a re-signed copy with its Message-ID → duplicate (${ledgerA[2]!.reason}), the new reply → applied:done; task A still has 1 artifact and 1 COMPLETED transition`,
    );
  });

  it('re-uploaded copies (same bytes, new UIDs) are duplicates, never applied twice', async () => {
    const h = await harness();
    const db = () => h.app.bridge.ctx.store;
    const t = await working(h);
    const reply = await h.reply(h.envelope(t.n), { answer: 'Only once.' });
    const uid1 = await dovecot.append(reply, { folder: h.folder });
    const uid2 = await dovecot.append(reply, { folder: h.folder }); // both land before one check
    expect((await call(h, 'status', t.ctx)).task.status.state).toBe('TASK_STATE_COMPLETED');
    const uid3 = await dovecot.append(reply, { folder: h.folder }); // and one after
    const again = await call(h, 'status', t.ctx);
    expect(again.task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(new Set([uid1, uid2, uid3]).size).toBe(3);
    const rows = db().ledger.ofTask(t.id);
    expect(rows.map((l) => [Number(l.source.split(':').at(-1)), l.verdict])).toEqual([
      [uid1, 'applied:done'],
      [uid2, 'duplicate'],
      [uid3, 'duplicate'],
    ]);
    expect(db().replies.ofTask(t.id)).toHaveLength(1);
    expect(again.task.artifacts).toHaveLength(1);
    expect(db().events.of(t.id).filter((e) => e.toState === 'COMPLETED')).toHaveLength(1);
    summary.add('re-uploaded copies (same bytes, UIDs ' + `${uid1}, ${uid2}, ${uid3})`, 'first → applied:done; the copy in the same check and the copy in a later check → duplicate (gate 1); 1 artifact, 1 COMPLETED transition');
  });
});
