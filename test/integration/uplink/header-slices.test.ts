/**
 * The header stage judges header blocks in slices, the event loop answering between two
 * (docs/architecture.md, "The header stage"): a slice ends at 50 blocks or 256 KiB of header
 * bytes. Counted by blocks alone, 50 forged header blocks of 200 KB each were judged in one turn
 * of the event loop — 100 such forgeries held it for 6.3 s, no call answered meanwhile. A real
 * bridge on a Maildir; the slices are seen from a `setImmediate` ticker that reads the ledger
 * between two turns.
 */
import { mkdirSync, rmSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApp, type App } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/config.js';
import { startDnsZone, type DnsZone } from '../../../src/demo/dns-zone.js';
import { buildReplyMail, dkimTxtName, generateDkimKey } from '../../../src/demo/reply-mail.js';
import { checkRequest, type CheckSummary } from '../../../src/core/mail-check.js';
import { createLogger } from '../../../src/log.js';
import { STAMP_PREFIX_BYTES } from '../../../src/uplink/gates.js';
import { deliverToMaildir, MaildirMailbox } from '../../../src/uplink/maildir-mailbox.js';
import { AGENT_ADDRESS, AGENT_DOMAIN, agentReply, hermesBody, hex, PROVIDER, SELECTOR } from '../../helpers/bridge-harness.js';
import { makeConfigDir, minimalToml, TEST_BEARER, TEST_WEBHOOK_BEARER, TEST_WEBHOOK_SECRET, type ConfigDir } from '../../helpers/config-dir.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';

let zone: DnsZone;
let receiver: WebhookReceiver;
let dir: ConfigDir;
let app: App;
let key: ReturnType<typeof generateDkimKey>;
let maildir: string;

beforeAll(async () => {
  key = generateDkimKey();
  zone = await startDnsZone([{ name: dkimTxtName(SELECTOR, AGENT_DOMAIN), type: 'TXT', data: key.publicKeyTxt }]);
  receiver = await startWebhookReceiver({ secret: TEST_WEBHOOK_SECRET, bearer: TEST_WEBHOOK_BEARER });
  dir = makeConfigDir(`${minimalToml({ webhookUrl: receiver.url }).replace('[mailbox]', '[mailbox]\ncheck_interval_s = 3600')}\n[dns]\nservers = ["${zone.address}"]\n`);
  const config = loadConfig(dir.configPath);
  maildir = config.mailbox.maildirPath!;
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(maildir, sub), { recursive: true });
  app = await startApp(config, { log: createLogger('silent'), mailbox: new MaildirMailbox(maildir) });
  await app.bridge.idle();
});

afterAll(async () => {
  await app?.close();
  await receiver?.close();
  await zone?.close();
  if (dir) rmSync(dir.dir, { recursive: true, force: true });
});

/** A new task of the agent's, and the envelope the webhook received for it. */
async function newJob(): Promise<{ id: string; env: Parameters<typeof agentReply>[0] }> {
  const res = await fetch(app.server.endpoint(app.bridge.ctx.config.agents[0]!), {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}`, 'a2a-version': '1.0' },
    body: JSON.stringify(hermesBody('Job behind heavy forgeries', `ctx-${hex(8)}`)),
  });
  const task = ((await res.json()) as { result: { task: { id: string } } }).result.task;
  return { id: task.id, env: receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === task.id)! };
}

let at = Date.now() - 3600_000;
/**
 * `forgeries`, then the genuine reply to `job`, into the Maildir oldest first; one check, the ledger watched between two turns of the
 * event loop. `notOurs`: how many of the forgeries the narrowing keeps as not ours (no ledger row; src/uplink/maildir-narrowing.ts).
 */
async function flood(job: Awaited<ReturnType<typeof newJob>>, forgeries: Buffer[], notOurs = 0): Promise<{ summary: CheckSummary; steps: number[]; completed: boolean }> {
  const put = async (raw: Buffer): Promise<void> => {
    const p = await deliverToMaildir(maildir, raw);
    utimesSync(p, new Date((at += 1000)), new Date(at));
  };
  for (const f of forgeries) await put(f);
  await put(await agentReply(job.env, key.privateKeyPem, { answer: 'The genuine answer.' }));
  const store = app.bridge.ctx.store;
  // Every row, not the task's: a forgery refused on its stamp names the task only when its prefix shows the tag.
  const rows = (): number => store.ledger.query({ limit: 100_000 }).length;
  const steps: number[] = [];
  let ticking = true;
  let seen = rows();
  const tick = (): void => {
    const now = rows();
    if (now !== seen) steps.push(now - seen);
    seen = now;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  const summary = await app.bridge.checkNow();
  ticking = false;
  await new Promise((resolve) => setImmediate(resolve));
  expect(steps.reduce((x, y) => x + y, 0)).toBe(forgeries.length - notOurs + 1);
  return { summary, steps, completed: store.tasks.get(job.id)!.state === 'COMPLETED' };
}

/**
 * 20 forgeries of 200 KB header blocks (the agent's From, the live tag and token, 2,000 padding
 * fields) queued before a genuine reply, stamped by the provider with `results`; one check.
 * @returns the check's summary, the ledger rows recorded between two turns of the event loop (as
 *   a `setImmediate` ticker saw them), and whether the task was completed
 */
async function floodOfHeavyForgeries(results: string): Promise<{ summary: CheckSummary; steps: number[]; completed: boolean; forged: Buffer }> {
  const job = await newJob();
  const env = job.env;
  const padding = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`X-Pad-${i}`, 'p'.repeat(90)]));
  const forged = await buildReplyMail({
    from: `Grok Agent <${AGENT_ADDRESS}>`, to: env.reply_to, subject: `Re: ${env.subject_tag}`, token: env.reply_token, status: 'done', answer: 'forged', headers: padding,
    provider: { ...PROVIDER, fromHost: 'mx.evil.example', fromIp: '203.0.113.66', results },
  });
  // The padding under the sender's other fields (MailComposer writes it first): the From and the
  // tag within the first 16 KiB, where the Maildir narrowing sees them.
  const end = forged.indexOf('\r\n\r\n');
  const lines = forged.subarray(0, end).toString('latin1').split(/\r\n(?![ \t])/); // whole fields, folding kept
  const forgedBytes = Buffer.concat([Buffer.from([...lines.filter((l) => !l.startsWith('X-Pad-')), ...lines.filter((l) => l.startsWith('X-Pad-'))].join('\r\n'), 'latin1'), forged.subarray(end)]);
  expect(forgedBytes.length).toBe(forged.length);
  expect(forgedBytes.indexOf('\r\n\r\n')).toBeGreaterThan(200_000);
  const forgeries = Array.from({ length: 20 }, (_, i) => Buffer.from(forgedBytes.toString('latin1').replace('Subject:', `X-N: ${i}\r\nSubject:`), 'latin1'));
  return { ...(await flood(job, forgeries)), forged: forgedBytes };
}

it('20 forgeries of 200 KB header blocks whose provider stamp says dmarc=fail are refused on their first 16 KiB, in slices, and the genuine reply behind them is applied in the same check', async () => {
  const { summary, steps, completed, forged } = await floodOfHeavyForgeries(`dkim=none; spf=fail smtp.mailfrom=${AGENT_DOMAIN}; dmarc=fail (p=reject) header.from=${AGENT_DOMAIN}`);
  expect(summary).toMatchObject({ ok: true, fetched: 21, onHeaders: 20, verdicts: { 'auth:dmarc-fail': 20, 'applied:done': 1 } });
  expect(completed).toBe(true);
  // Read: 20 prefixes and the reply (its header block, then whole); never a forgery's 200 KB.
  expect(summary.bytes).toBeLessThan(20 * STAMP_PREFIX_BYTES + 3 * 16 * 1024);
  expect(summary.bytes).toBeGreaterThanOrEqual(20 * STAMP_PREFIX_BYTES);
  expect(forged.length).toBeGreaterThan(10 * STAMP_PREFIX_BYTES);
  // A slice is at most 256 KiB of what was read: 16 prefixes.
  expect(Math.max(...steps)).toBeLessThanOrEqual(16);
});

it('20 forgeries of 200 KB header blocks whose provider stamp says dkim=pass for the agent (no signature of theirs matches it) are read on and judged one to a turn of the event loop', async () => {
  const { summary, steps, completed } = await floodOfHeavyForgeries(`dkim=pass header.d=${AGENT_DOMAIN} header.b=AAAAAAAA; spf=pass smtp.mailfrom=${AGENT_DOMAIN}; dmarc=pass header.from=${AGENT_DOMAIN}`);
  expect(summary).toMatchObject({ ok: true, fetched: 21, onHeaders: 20, verdicts: { 'auth:dkim-unaligned': 20, 'applied:done': 1 } });
  expect(completed).toBe(true);
  expect(summary.bytes).toBeGreaterThan(20 * 200_000); // each header block read whole: its stamp could not refuse it
  expect(Math.max(...steps)).toBe(1); // was 20: every forgery judged in one turn
});

it('40 field-dense forgeries (13 KB of tiny X:a fields each) are judged at most 4,096 header lines to a turn of the event loop, and the genuine reply is applied in the same check', async () => {
  const job = await newJob();
  const forged = await buildReplyMail({
    from: `Grok Agent <${AGENT_ADDRESS}>`, to: job.env.reply_to, subject: `Re: ${job.env.subject_tag}`, token: job.env.reply_token, status: 'done', answer: 'forged',
    provider: { ...PROVIDER, fromHost: 'mx.evil.example', fromIp: '203.0.113.66', results: `dkim=none; spf=fail smtp.mailfrom=${AGENT_DOMAIN}; dmarc=fail (p=reject) header.from=${AGENT_DOMAIN}` },
  });
  const end = forged.indexOf('\r\n\r\n');
  const dense = (i: number): Buffer => Buffer.concat([forged.subarray(0, end + 2), Buffer.from(`X-N: ${i}\r\n${'X:a\r\n'.repeat(2600)}`), forged.subarray(end + 2)]);
  expect(dense(0).indexOf('\r\n\r\n')).toBeLessThan(STAMP_PREFIX_BYTES);
  const { summary, steps, completed } = await flood(job, Array.from({ length: 40 }, (_, i) => dense(i)));
  expect(summary).toMatchObject({ ok: true, fetched: 41, onHeaders: 40, verdicts: { 'auth:dmarc-fail': 40, 'applied:done': 1 } });
  expect(completed).toBe(true);
  expect(Math.max(...steps)).toBe(1); // was 17: 256 KiB of such blocks in one turn
});

it("30 untagged mails not from the agent with 250 KB header blocks: the 15 whose first From and Subject show them not ours are kept as not ours on their first 16 KiB, the 15 with tag-like later Subjects are read at most 80 KiB each and get a ledger verdict, and a restart reads none of them again", async () => {
  const job = await newJob();
  const other = await buildReplyMail({
    from: 'News <news@other.example>', to: job.env.reply_to, subject: 'Weekly news', token: 'none', status: 'done', answer: 'news',
    provider: { ...PROVIDER, fromHost: 'mx.other.example', fromIp: '203.0.113.7', results: 'dkim=pass header.d=other.example header.b=AAAAAAAA; spf=pass smtp.mailfrom=other.example; dmarc=pass header.from=other.example' },
  });
  const end = other.indexOf('\r\n\r\n');
  const soup = 'Subject: =?utf-8?Q?=5BGROX?= =?iso-8859-1?B?Og==?= =?koi8-r?Q?x?= =?shift_jis?B?eA==?=\r\n';
  const padded = (i: number): Buffer => Buffer.concat([other.subarray(0, end + 2), Buffer.from(`X-N: ${i}\r\n${(i % 2 ? soup : 'X-Pad: pppppppppppppppp\r\n').repeat(i % 2 ? 3000 : 10_000)}`), other.subarray(end + 2)]);
  expect(padded(0).indexOf('\r\n\r\n')).toBeGreaterThan(240_000);
  const { summary, completed } = await flood(job, Array.from({ length: 30 }, (_, i) => padded(i)), 15);
  expect(summary).toMatchObject({ ok: true, fetched: 16, onHeaders: 15, notOurs: 15, verdicts: { 'auth:dkim-unaligned': 15, 'applied:done': 1 } });
  expect(completed).toBe(true);
  expect(summary.bytes).toBeLessThan(30 * 80 * 1024 + 64 * 1024); // was 30 × 256 KiB, counted as 0
  // A restart: a new reader of the folder asked what the bridge asks (the store's records of what was judged and what is not ours).
  const pass = await new MaildirMailbox(maildir).open(checkRequest(app.bridge.ctx, { uidValidity: null, lastUid: 0 }));
  expect([await pass.headers(), pass.bytesFetched]).toEqual([[], 0]);
});

it('20 forgeries whose 16 KiB prefix holds 190 encoded Subjects (about 22 ms each to judge while gate 2 decoded them all) are judged one to a turn when each takes the time budget of a slice (the monotonic clock pinned)', async () => {
  const job = await newJob();
  const forged = await buildReplyMail({
    from: 'News <news@other.example>', to: job.env.reply_to, subject: 'Weekly news', token: 'none', status: 'done', answer: 'news',
    provider: { ...PROVIDER, fromHost: 'mx.other.example', fromIp: '203.0.113.7', results: 'dkim=none; spf=fail smtp.mailfrom=other.example; dmarc=fail header.from=other.example' },
  });
  const end = forged.indexOf('\r\n\r\n');
  const soup = 'Subject: =?utf-8?Q?=5BGROX?= =?iso-8859-1?B?Og==?= =?koi8-r?Q?x?= =?shift_jis?B?eA==?=\r\n';
  const forgery = (i: number): Buffer => Buffer.concat([forged.subarray(0, end + 2), Buffer.from(`X-N: ${i}\r\n${soup.repeat(300)}`), forged.subarray(end + 2)]);
  let ms = 0;
  app.bridge.ctx.monotonic = () => (ms += 10); // every block judged takes a slice's 10 ms
  try {
    const { summary, steps, completed } = await flood(job, Array.from({ length: 20 }, (_, i) => forgery(i)));
    expect(summary).toMatchObject({ ok: true, fetched: 21, onHeaders: 20, verdicts: { 'applied:done': 1 } });
    expect(completed).toBe(true);
    expect(Math.max(...steps)).toBe(1); // was 16: a slice of 256 KiB of prefixes
  } finally {
    delete app.bridge.ctx.monotonic;
  }
});
