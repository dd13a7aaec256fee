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
import { createLogger } from '../../../src/log.js';
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

it('20 forged header blocks of 200 KB are judged one to a turn of the event loop, and the genuine reply behind them is applied in the same check', async () => {
  const res = await fetch(app.server.endpoint(app.bridge.ctx.config.agents[0]!), {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}`, 'a2a-version': '1.0' },
    body: JSON.stringify(hermesBody('Job behind heavy forgeries', `ctx-${hex(8)}`)),
  });
  const task = ((await res.json()) as { result: { task: { id: string } } }).result.task;
  const env = receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === task.id)!;
  // The agent's From, the live tag and token; 2,000 padding fields make a 200 KB header block. The
  // provider stamps what it saw: dmarc=fail.
  const padding = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`X-Pad-${i}`, 'p'.repeat(90)]));
  const forged = await buildReplyMail({
    from: `Grok Agent <${AGENT_ADDRESS}>`, to: env.reply_to, subject: `Re: ${env.subject_tag}`, token: env.reply_token, status: 'done', answer: 'forged', headers: padding,
    provider: { ...PROVIDER, fromHost: 'mx.evil.example', fromIp: '203.0.113.66', results: `dkim=none; spf=fail smtp.mailfrom=${AGENT_DOMAIN}; dmarc=fail (p=reject) header.from=${AGENT_DOMAIN}` },
  });
  expect(forged.indexOf('\r\n\r\n')).toBeGreaterThan(200_000);
  let at = Date.now() - 3600_000;
  const put = async (raw: Buffer): Promise<void> => {
    const p = await deliverToMaildir(maildir, raw);
    utimesSync(p, new Date((at += 1000)), new Date(at));
  };
  for (let i = 0; i < 20; i++) await put(Buffer.from(forged.toString('latin1').replace('Subject:', `X-N: ${i}\r\nSubject:`), 'latin1'));
  await put(await agentReply(env, key.privateKeyPem, { answer: 'The genuine answer.' }));

  const store = app.bridge.ctx.store;
  const rows = (): number => store.ledger.ofTask(task.id).length;
  /** The ledger rows recorded between two turns of the event loop, as the ticker saw them. */
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

  expect(summary).toMatchObject({ ok: true, fetched: 21, onHeaders: 20, verdicts: { 'auth:dmarc-fail': 20, 'applied:done': 1 } });
  expect(store.tasks.get(task.id)!.state).toBe('COMPLETED');
  expect(steps.reduce((a, b) => a + b, 0)).toBe(21);
  expect(Math.max(...steps)).toBe(1); // was 20: every forgery judged in one turn
});
