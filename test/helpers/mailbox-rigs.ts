/**
 * One bridge on one kind of mailbox — a folder of a real Dovecot, or a Maildir — driven the same
 * way, for the tests that run each case on both readers (test/integration/uplink/header-first.test.ts
 * and mail-trace.test.ts): tasks over JSON-RPC, genuine replies signed by the agent's key and
 * stamped by the provider, forgeries, delivery in order, checks started by the test.
 */
import { mkdirSync, rmSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import type { V1Task } from '../../src/a2a/wire.js';
import { startApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import type { Bridge } from '../../src/core/bridge.js';
import { startDnsZone, type DnsZone } from '../../src/demo/dns-zone.js';
import { buildReplyMail, dkimTxtName, generateDkimKey, type ReplyMailOptions } from '../../src/demo/reply-mail.js';
import type { Envelope } from '../../src/downlink/envelope.js';
import { createLogger } from '../../src/log.js';
import { deliverToMaildir, MaildirMailbox } from '../../src/uplink/maildir-mailbox.js';
import { multiAppend } from '../integration/faults/imap-faults.js';
import { AGENT_ADDRESS, AGENT_DOMAIN, agentReply, hermesBody, hex, PROVIDER, SELECTOR, startHarness, type Harness } from './bridge-harness.js';
import { makeConfigDir, minimalToml, TEST_BEARER, TEST_WEBHOOK_BEARER, TEST_WEBHOOK_SECRET, type ConfigDir } from './config-dir.js';
import type { DovecotHandle } from './dovecot.js';
import type { V1SendResult } from './rpc-json.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

/**
 * The mailbox settings of the rigs unless a test names its own: small budgets (a flood of 150 spans
 * two checks), and no check but those the test starts (`Bridge.checkNow`; interval 1 h).
 */
export const RIG_MAILBOX_TOML = 'check_interval_s = 3600\nmax_fetch_per_check = 2\nmax_prefixes_per_check = 100\nmax_headers_per_check = 100';

/** One bridge on one kind of mailbox, with what the tests need of it. */
export interface Rig {
  kind: 'imap' | 'maildir';
  readonly bridge: Bridge;
  newTask(text: string): Promise<{ id: string; envelope: Envelope }>;
  /** A genuine reply: DKIM-signed by the agent, stamped by the provider; `over` changes the mail (reply-mail.ts options). */
  reply(envelope: Envelope, answer: string, over?: Partial<ReplyMailOptions>): Promise<Buffer>;
  /** GetTask over JSON-RPC (v1.0), as a caller asks for the task. */
  getTask(id: string): Promise<V1Task>;
  /** Puts these into the folder, oldest first; the IMAP UIDs (a Maildir: empty). */
  deliver(raws: Buffer[]): Promise<number[]>;
  /** Stops the bridge and starts it again on the same store and folder (a new reader). */
  restart(): Promise<void>;
  /** The UIDs fetched whole so far (IMAP `BODY.PEEK[]`); a Maildir: null. */
  wholeFetched(): number[] | null;
  /** The IMAP commands sent so far; a Maildir: none. */
  imapCommands(): string[];
  /** Moves the bridge's clock forward by `ms` (IMAP; a Maildir rig runs on the real clock: undefined). */
  advance?(ms: number): void;
  close(): Promise<void>;
}

/**
 * A forgery of a reply to `envelope` as good as one can make without the agent's key: the agent's
 * From, the live task's tag, the (leaked) live token, and an Authentication-Results saying pass
 * among its own headers (below the border). The provider stamps what it saw: dmarc=fail.
 */
export function forged(envelope: Envelope, n: number): Promise<Buffer> {
  return buildReplyMail({
    from: `Grok Agent <${AGENT_ADDRESS}>`,
    to: envelope.reply_to,
    subject: `Re: your job ${envelope.subject_tag}`,
    token: envelope.reply_token,
    status: 'done',
    answer: `Forged answer ${n}: wire the money.`,
    headers: { 'Authentication-Results': `${PROVIDER.authservId}; dkim=pass header.d=${AGENT_DOMAIN} header.b=AAAAAAAA; dmarc=pass header.from=${AGENT_DOMAIN}` },
    provider: { ...PROVIDER, fromHost: 'mx.evil.example', fromIp: '203.0.113.66', results: `dkim=none; spf=fail smtp.mailfrom=${AGENT_DOMAIN}; dmarc=fail (p=reject) header.from=${AGENT_DOMAIN}` },
  });
}

/** A bridge on a folder of its own of a real Dovecot (bridge-harness.ts). */
export async function imapRig(dovecot: DovecotHandle, folder: string, mailboxToml = RIG_MAILBOX_TOML): Promise<Rig> {
  await dovecot.createFolder(folder);
  const h: Harness = await startHarness({ dovecot, mailboxToml: `folder = "${folder}"\n${mailboxToml}` });
  return {
    kind: 'imap',
    get bridge() {
      return h.app.bridge;
    },
    async newTask(text) {
      const task = (await h.rpc(hermesBody(text, `ctx-${hex(8)}`))).json.result!.task!;
      expect(task.status.state).toBe('TASK_STATE_WORKING');
      return { id: task.id, envelope: h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === task.id)! };
    },
    reply: (envelope, answer, over = {}) => h.reply(envelope, { answer, ...over }),
    getTask: async (id) => (await h.rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id } })).json.result!,
    async deliver(raws) {
      const { firstUid } = await multiAppend(dovecot, folder, raws);
      return raws.map((_, i) => firstUid + i);
    },
    restart: () => h.restart(),
    imapCommands: () => h.imapCommands,
    advance: (ms) => h.advance(ms),
    wholeFetched: () =>
      h.imapCommands
        .filter((c) => /UID FETCH \S+ \(?[^)]*BODY\.PEEK\[\]/.test(c))
        .flatMap((c) => c.split(' ')[3]!.split(',').flatMap((part) => {
          const [lo, hi] = part.split(':').map(Number);
          return hi === undefined ? [lo!] : Array.from({ length: hi - lo! + 1 }, (_, k) => lo! + k);
        })),
    close: () => h.close(),
  };
}

/** A bridge on a Maildir of its own, with its own DNS zone and webhook receiver. */
export async function maildirRig(mailboxToml = RIG_MAILBOX_TOML): Promise<Rig> {
  const key = generateDkimKey();
  const zone: DnsZone = await startDnsZone([{ name: dkimTxtName(SELECTOR, AGENT_DOMAIN), type: 'TXT', data: key.publicKeyTxt }]);
  const receiver: WebhookReceiver = await startWebhookReceiver({ secret: TEST_WEBHOOK_SECRET, bearer: TEST_WEBHOOK_BEARER });
  const dir: ConfigDir = makeConfigDir(`${minimalToml({ webhookUrl: receiver.url }).replace('[mailbox]', `[mailbox]\n${mailboxToml}`)}\n[dns]\nservers = ["${zone.address}"]\n`);
  const config = loadConfig(dir.configPath);
  const maildir = config.mailbox.maildirPath!;
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(maildir, sub), { recursive: true });
  const boot = async (): Promise<App> => {
    const app = await startApp(config, { log: createLogger('silent'), mailbox: new MaildirMailbox(maildir) });
    await app.bridge.idle();
    return app;
  };
  let app = await boot();
  /** One JSON-RPC call (v1.0, the bearer) to the agent's endpoint; its result. */
  const rpc = async <R>(body: unknown): Promise<R> => {
    const res = await fetch(app.server.endpoint(config.agents[0]!), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}`, 'a2a-version': '1.0' },
      body: JSON.stringify(body),
    });
    return ((await res.json()) as { result: R }).result;
  };
  /** Delivery times: one second apart, in the past, in the order given. */
  let clock = Date.now() - 3600_000;
  return {
    kind: 'maildir',
    get bridge() {
      return app.bridge;
    },
    async newTask(text) {
      const task = (await rpc<V1SendResult>(hermesBody(text, `ctx-${hex(8)}`))).task!;
      expect(task.status.state).toBe('TASK_STATE_WORKING');
      return { id: task.id, envelope: receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === task.id)! };
    },
    reply: (envelope, answer, over = {}) => agentReply(envelope, key.privateKeyPem, { answer, ...over }),
    getTask: (id) => rpc<V1Task>({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id } }),
    async deliver(raws) {
      for (const raw of raws) {
        const path = await deliverToMaildir(maildir, raw);
        clock += 1000;
        utimesSync(path, new Date(clock), new Date(clock));
      }
      return [];
    },
    async restart() {
      await app.close();
      app = await boot();
    },
    wholeFetched: () => null,
    imapCommands: () => [],
    async close() {
      await app.close();
      await receiver.close();
      await zone.close();
      rmSync(dir.dir, { recursive: true, force: true });
    },
  };
}

/**
 * The rig of one describe block: made before its tests (`make`, e.g. {@link imapRig} or
 * {@link maildirRig}) and closed after them. Call it in the block's body; the getter returns the
 * rig inside its tests.
 */
export function rigPerSuite(make: () => Promise<Rig>): () => Rig {
  let rig: Rig | undefined;
  beforeAll(async () => {
    rig = await make();
  });
  afterAll(async () => {
    await rig?.close();
  });
  return () => rig!;
}
