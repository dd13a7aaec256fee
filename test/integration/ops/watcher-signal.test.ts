import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type App } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/config.js';
import { startDnsZone, type DnsZone } from '../../../src/demo/dns-zone.js';
import { dkimTxtName, generateDkimKey } from '../../../src/demo/reply-mail.js';
import type { Envelope } from '../../../src/downlink/envelope.js';
import { createLogger } from '../../../src/log.js';
import type { ChangeCause, ChangeFeed } from '../../../src/uplink/change-feed.js';
import { deliverToMaildir, MaildirMailbox } from '../../../src/uplink/maildir-mailbox.js';
import { AGENT_DOMAIN, agentReply, hermesBody, hex, SELECTOR } from '../../helpers/bridge-harness.js';
import { makeConfigDir, minimalToml, TEST_BEARER, TEST_WEBHOOK_BEARER, TEST_WEBHOOK_SECRET, type ConfigDir } from '../../helpers/config-dir.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import type { V1SendResult } from '../../helpers/rpc-json.js';

/**
 * The watcher and a check it did not start. A call's refresh (or the timer) may be running a
 * check that listed the folder before a reply landed; the change signal for that reply comes
 * while it runs. That signal must cause one more check after it — not join it and be lost until
 * the next `check_interval_s`. Deterministic: the first check is held open at a seam of the
 * Maildir reader (after a header block was read), the reply delivered and the signal sent while
 * it is held; nothing but the watcher could check again (interval and tick an hour).
 */
let zone: DnsZone;
let receiver: WebhookReceiver;
let dir: ConfigDir;
let app: App;
let maildir: string;
let key: ReturnType<typeof generateDkimKey>;
/** The watcher's change callback, as the feed was handed it. */
let signal: ((cause: ChangeCause) => void) | undefined;
/** While set, the Maildir reader stops after the next header block it reads until `release` resolves. */
let hold: { reached: () => void; release: Promise<void> } | undefined;

/** A change feed the test drives: it signals only when the test calls `signal`. */
const feed: ChangeFeed = {
  run(onChange, aborted) {
    signal = onChange;
    return new Promise((resolve) => aborted.addEventListener('abort', () => resolve(), { once: true }));
  },
};

beforeAll(async () => {
  key = generateDkimKey();
  zone = await startDnsZone([{ name: dkimTxtName(SELECTOR, AGENT_DOMAIN), type: 'TXT', data: key.publicKeyTxt }]);
  receiver = await startWebhookReceiver({ secret: TEST_WEBHOOK_SECRET, bearer: TEST_WEBHOOK_BEARER });
  const toml = minimalToml({ webhookUrl: receiver.url }).replace('[mailbox]', '[mailbox]\ncheck_interval_s = 3600\nwatch = true\nwatch_tick_s = 3600');
  dir = makeConfigDir(`${toml}\n[dns]\nservers = ["${zone.address}"]\n`);
  const config = loadConfig(dir.configPath);
  maildir = config.mailbox.maildirPath!;
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(maildir, sub), { recursive: true });
  const mailbox = new MaildirMailbox(maildir, {
    afterHeaderRead: async () => {
      const h = hold;
      if (!h) return;
      hold = undefined;
      h.reached();
      await h.release;
    },
  });
  app = await startApp(config, { log: createLogger('silent'), mailbox, changeFeed: feed });
  await app.bridge.idle(); // the start-up check
});
afterAll(async () => {
  await app?.close();
  await receiver?.close();
  await zone?.close();
  rmSync(dir.dir, { recursive: true, force: true });
});

async function newTask(text: string): Promise<{ id: string; envelope: Envelope }> {
  const res = await fetch(app.server.endpoint(app.bridge.ctx.config.agents[0]!), {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}`, 'a2a-version': '1.0' },
    body: JSON.stringify(hermesBody(text, `ctx-${hex(8)}`)),
  });
  const task = ((await res.json()) as { result: V1SendResult }).result.task!;
  expect(task.status.state).toBe('TASK_STATE_WORKING');
  return { id: task.id, envelope: receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === task.id)! };
}

function reply(env: Envelope, answer: string): Promise<Buffer> {
  return agentReply(env, key.privateKeyPem, { answer });
}

describe('the watcher', () => {
  it('a change signalled while a check it did not start is running causes one more check after it', async () => {
    const a = await newTask('Job A');
    const b = await newTask('Job B');
    await deliverToMaildir(maildir, await reply(a.envelope, 'Answer A.'));
    let reached!: () => void;
    const heldOpen = new Promise<void>((resolve) => (reached = resolve));
    let release!: () => void;
    hold = { reached, release: new Promise<void>((resolve) => (release = resolve)) };

    // A check as a call's refresh starts it; it has listed the folder and is reading A's reply.
    const first = app.bridge.checkNow();
    await heldOpen;
    // B's reply lands now, and the feed says so.
    await deliverToMaildir(maildir, await reply(b.envelope, 'Answer B.'));
    signal!('exists');
    // Every other signal during this check folds into the same one more check.
    expect(app.bridge.checkAfterChange()).toBe(app.bridge.checkAfterChange());
    release();

    const summary = await first;
    expect(summary.verdicts).toEqual({ 'applied:done': 1 });
    expect(app.bridge.ctx.store.tasks.get(a.id)!.state).toBe('COMPLETED');
    expect(app.bridge.ctx.store.tasks.get(b.id)!.state).toBe('WORKING'); // the held check listed before B landed

    // idle() waits for the check queued after the running one: it applied B.
    await app.bridge.idle();
    expect(app.bridge.ctx.store.tasks.get(b.id)!.state).toBe('COMPLETED');
    expect(app.bridge.ctx.store.ledger.ofTask(b.id).map((r) => r.verdict)).toEqual(['applied:done']);
  });
});
