import { chmodSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { iso } from '../../../src/core/time.js';
import { ImapMailbox, RECONNECT_EVERY_MS } from '../../../src/uplink/imap-mailbox.js';
import { HEADER_BATCH } from '../../../src/uplink/mailbox.js';
import { AGENT_ADDRESS, hermesBody, startHarness, type Harness, type HarnessOptions } from '../../helpers/bridge-harness.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { unfence } from '../../helpers/agent-text.js';
import { healthOf, newContext, shown, statusMessage } from './caller-view.js';
import { multiAppend, startImapProxy, startSilentServer, type ImapProxy } from './imap-faults.js';
import { Summary } from './summary.js';
import type { HealthJson } from '../../../src/a2a/health.js';
import type { V1Task } from '../../../src/a2a/wire.js';

/**
 * Mailbox faults. None may fail an A2A call: every poll answers HTTP 200 with the task's current
 * state, its status text says the mailbox is unreachable and since when, and GET /health shows the
 * last success, the last error and since when. Faults come from a TCP proxy in front of the real
 * Dovecot (refuse, cut mid-FETCH, come back on the same port), a silent server, a wrong password
 * file and TLS against a plaintext port. Every test reads its own folder, so watermarks and ledgers
 * are its own.
 */
let dovecot: DovecotHandle;
let folders = 0;
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

/** A harness reading a fresh folder of `server` (default: the shared Dovecot). */
async function harness(o: Partial<HarnessOptions> & { server?: DovecotHandle; folder?: string } = {}): Promise<Harness & { folder: string }> {
  const server = o.server ?? dovecot;
  const folder = o.folder ?? `F${++folders}`;
  await server.createFolder(folder);
  const h = await startHarness({ ...o, dovecot: o.dovecot ?? server, mailboxToml: `folder = "${folder}"\n${o.mailboxToml ?? ''}` });
  cleanup.push(async () => {
    await h.close();
    rmSync(h.configDir.dir, { recursive: true, force: true });
  });
  await h.app.bridge.idle(); // the start-up check
  return Object.assign(h, { folder });
}

async function proxy(mode: 'pass' | 'refuse' = 'pass'): Promise<ImapProxy> {
  const p = await startImapProxy(dovecot.port, mode);
  cleanup.push(() => p.close());
  return p;
}

/** One Hermes-style call: HTTP 200, a task result (never a JSON-RPC error), and the time it took. */
async function call(h: Harness, text: string, ctx: string): Promise<{ task: V1Task; ms: number }> {
  const started = performance.now();
  const r = await h.rpc(hermesBody(text, ctx));
  const ms = performance.now() - started;
  expect(r.status).toBe(200);
  expect(r.json.error).toBeUndefined();
  return { task: r.json.result!.task!, ms };
}

/** Starts a task whose webhook is accepted (WORKING); returns its context, id and envelope. */
async function working(h: Harness): Promise<{ ctx: string; id: string; n: number }> {
  const ctx = newContext();
  const { task } = await call(h, 'Summarise the report', ctx);
  expect(task.status.state).toBe('TASK_STATE_WORKING');
  return { ctx, id: task.id, n: h.receiver.requests.length };
}

const UNREACHABLE = /The mailbox is unreachable since (\S+Z): ([\s\S]*?)(?: \(last successful check (\S+Z)\))?; replies will be read once it is back\./;

/**
 * A poll while the mailbox fails: 200, WORKING, the status text names the error and since when,
 * and /health agrees. Returns what was shown.
 */
async function expectUnreachable(h: Harness, ctx: string, error: RegExp): Promise<{ since: string; lastSuccess: string | null; text: string; health: HealthJson; ms: number }> {
  const { task, ms } = await call(h, 'status', ctx);
  expect(task.status.state).toBe('TASK_STATE_WORKING');
  const text = statusMessage(task);
  const m = UNREACHABLE.exec(text);
  expect(m, text).not.toBeNull();
  expect(m![2]).toMatch(error);
  const health = await healthOf(h);
  expect(health.status).toBe('degraded');
  expect(health.mailbox.lastError).toBe(m![2]);
  // /health has milliseconds, the status text (for people) whole seconds.
  expect(toSecond(health.mailbox.errorSince)).toBe(m![1]);
  expect(toSecond(health.mailbox.lastSuccessAt)).toBe(m![3] ?? null);
  expect(health.mailbox.lastResult).toBe('failed');
  expect(text).toContain(`Call again with context_id ${ctx} to check (send "status").`);
  return { since: m![1]!, lastSuccess: m![3] ?? null, text, health, ms };
}

/** An ISO timestamp cut to the second, as the status text prints it (`…:05Z`); null stays null. */
function toSecond(t: string | null): string | null {
  return t === null ? null : iso(Date.parse(t));
}

/** The file in the shared Dovecot's Maildir (folder `.name/`, Maildir++) of the message whose text holds `marker`. */
function messageFile(folder: string, marker: string): string {
  for (const sub of ['cur', 'new']) {
    const dir = join(dovecot.maildir, `.${folder}`, sub);
    for (const f of readdirSync(dir)) if (readFileSync(join(dir, f), 'latin1').includes(marker)) return join(dir, f);
  }
  throw new Error(`no message with ${marker} in ${folder}`);
}

/** Counts of each verdict in a list of ledger rows. */
function tally(verdicts: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of verdicts) out[v] = (out[v] ?? 0) + 1;
  return out;
}

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
    expect((await healthOf(h)).status).toBe('ok');
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
