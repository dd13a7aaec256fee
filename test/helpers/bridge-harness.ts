import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startApp, type App } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config/config.js';
import type { Envelope } from '../../src/downlink/envelope.js';
import { startDnsZone, type DnsZone } from '../../src/demo/dns-zone.js';
import { buildReplyMail, dkimTxtName, generateDkimKey, type ReplyMailOptions } from '../../src/demo/reply-mail.js';
import { createLogger } from '../../src/log.js';
import { ImapMailbox } from '../../src/uplink/imap-mailbox.js';
import { makeConfigDir, TEST_BEARER, TEST_WEBHOOK_BEARER, TEST_WEBHOOK_SECRET, type ConfigDir } from './config-dir.js';
import { startDovecot, type DovecotHandle } from './dovecot.js';
import { startWebhookReceiver, type PlannedResponse, type RecordedRequest, type WebhookReceiver } from './webhook-receiver.js';
import type { ResultOfBody, RpcAnswer } from './rpc-json.js';

export const AGENT_ADDRESS = 'agent@agent.example';
export const AGENT_DOMAIN = 'agent.example';
export const SELECTOR = 'test2026';
export const PROVIDER = { mxHost: 'mx1.messagingengine.com', authservId: 'mx1.messagingengine.com', fromHost: 'mail.agent.example', fromIp: '192.0.2.25' };

/** One IMAP command the bridge's client sent, as imapflow logged it. */
export interface ImapCommand {
  text: string;
}

export interface Harness {
  app: App;
  config: Config;
  configDir: ConfigDir;
  receiver: WebhookReceiver;
  zone: DnsZone;
  client: Client;
  /** The agent's JSON-RPC URL, exactly as its card names it. */
  endpoint: string;
  /** The JSON-RPC URL of any configured agent by name. */
  endpointOf(name: string): string;
  /** Every IMAP command line the bridge sent (imapflow `src: 'c'` entries). */
  imapCommands: string[];
  /** Stops the bridge (socket, store) and starts it again on the same store and config; `app`, `endpoint` and `client` change. */
  restart(): Promise<void>;
  /** Shifts the bridge's clock forward, in ms. */
  advance(ms: number): void;
  /** A reply to `envelope`, DKIM-signed by the agent's key and stamped by the provider, unless overridden. */
  reply(envelope: Envelope, o?: Partial<ReplyMailOptions>): Promise<Buffer>;
  /** The envelope of the n-th webhook request (1-based). */
  envelope(n: number): Envelope;
  /**
   * A raw JSON-RPC POST to the agent endpoint (or `url`), with the bearer and `A2A-Version: 1.0` unless
   * overridden. The answer reads as the result of the body's `method` (rpc-json.ts).
   */
  rpc<const B>(body: B, headers?: Record<string, string>, url?: string): Promise<{ status: number; json: RpcAnswer<ResultOfBody<B>>; headers: Headers }>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  dovecot: DovecotHandle;
  /** Extra TOML lines in [server] (e.g. `wait_budget_s = 3`). */
  serverToml?: string;
  /** The bridge's clock stands still but for `advance` (default: it runs with the real one, shifted by `advance`). */
  frozenClock?: boolean;
  /** How often `serve`'s timer runs the store's upkeep without a call, in ms (AppOptions.upkeepEveryMs). */
  upkeepEveryMs?: number;
  /** How long the watcher on demand outlives its last holder, in ms (AppOptions.watchLingerMs). */
  watchLingerMs?: number;
  /** Extra TOML lines in [mailbox] (e.g. `check_interval_s = 60`, which replaces the harness's `check_interval_s = 0`). */
  mailboxToml?: string;
  /** Extra TOML lines in the first agent's table (`grok`). */
  agentToml?: string;
  /**
   * Extra TOML lines in the first agent's [agents.webhook] table (e.g. `notify_cancel = true`). A key
   * set here replaces the harness's line for it (`url`, `auth`, `timeout_s`…) instead of clashing.
   */
  webhookToml?: string;
  /**
   * Extra TOML lines in [mailbox.imap] (e.g. `timeout_s = 1`, `tls = true`). A key set here replaces
   * the harness's line for it (`host`, `port`, `tls`, `user`, `password_file`).
   */
  imapToml?: string;
  /**
   * Adds a second agent `claude` (tag CLAUDE, address claude@agent.example, same DKIM domain and
   * key, same webhook receiver) at /agents/claude.
   */
  secondAgent?: boolean;
  respond?: (req: RecordedRequest, n: number) => PlannedResponse;
}

/**
 * `defaults` (one `key = value` per line) followed by `extra`, leaving out each default line whose
 * key `extra` sets (a TOML table may not set a key twice). Without `extra`, `defaults` unchanged.
 */
function tomlLines(defaults: string, extra: string | undefined): string {
  if (!extra) return `${defaults}\n${extra ?? ''}`;
  const keyOf = (line: string): string | null => /^\s*([A-Za-z0-9_-]+)\s*=/.exec(line)?.[1] ?? null;
  const overridden = new Set(extra.split('\n').map(keyOf).filter((k): k is string => k !== null));
  const kept = defaults.split('\n').filter((line) => {
    const k = keyOf(line);
    return k === null || !overridden.has(k);
  });
  return `${kept.join('\n')}\n${extra}`;
}

/**
 * The per-agent caps in the harness's config: a test file shares one bridge and creates far more
 * tasks a minute than a person would; the tests of the caps set their own (`agentToml`, `webhookToml`).
 */
const HARNESS_CAPS = { agent: 'max_open_tasks = 10000', webhook: 'max_per_minute = 10000' };

/**
 * The harness's config text: one agent `grok` (and `claude` with `secondAgent`) on a Dovecot, a
 * webhook receiver and a DNS zone; the `*Toml` options add or replace lines in their tables.
 */
export function harnessToml(
  o: Omit<HarnessOptions, 'respond'> & { zoneAddress: string; webhookUrl: string; port?: number },
): string {
  return `
[server]
listen = "127.0.0.1:${o.port ?? 0}"
bearer_file = "bearer"
${o.serverToml ?? ''}

[store]
path = "state/bridge.sqlite"

[mailbox]
kind = "imap"
address = "me@bridge.test"
${tomlLines('check_interval_s = 0', o.mailboxToml)}
[mailbox.imap]
${tomlLines(`host = "127.0.0.1"
port = ${o.dovecot.port}
tls = false
user = "${o.dovecot.user}"
password_file = "imap-password"`, o.imapToml)}

[dns]
servers = ["${o.zoneAddress}"]

[[agents]]
name = "grok"
address = "${AGENT_ADDRESS}"
dkim_domain = "${AGENT_DOMAIN}"
${tomlLines(HARNESS_CAPS.agent, o.agentToml)}
[agents.webhook]
${tomlLines(`url = "${o.webhookUrl}"
auth = "both"
bearer_file = "webhook-bearer"
secret_file = "webhook-secret"
timeout_s = 5
${HARNESS_CAPS.webhook}`, o.webhookToml)}
${
  o.secondAgent
    ? `
[[agents]]
name = "claude"
address = "claude@agent.example"
dkim_domain = "${AGENT_DOMAIN}"
${HARNESS_CAPS.agent}
[agents.webhook]
url = "${o.webhookUrl}"
auth = "both"
bearer_file = "webhook-bearer"
secret_file = "webhook-secret"
timeout_s = 5
${HARNESS_CAPS.webhook}
`
    : ''
}`;
}

/**
 * A reply to `envelope` as the agent sends it: From the agent (claude's for a CLAUDE tag), the
 * subject tag, token and status, DKIM-signed with `privateKeyPem` by the agent domain and stamped
 * by the provider, unless overridden.
 */
export function agentReply(envelope: Envelope, privateKeyPem: string, over: Partial<ReplyMailOptions> = {}): Promise<Buffer> {
  return buildReplyMail({
    from: envelope.subject_tag.startsWith('[CLAUDE:') ? 'Claude <claude@agent.example>' : `Grok Agent <${AGENT_ADDRESS}>`,
    to: envelope.reply_to,
    subject: `Re: your job ${envelope.subject_tag}`,
    token: envelope.reply_token,
    status: 'done',
    answer: 'Here is the result.',
    dkim: { domain: AGENT_DOMAIN, selector: SELECTOR, privateKeyPem },
    provider: PROVIDER,
    ...over,
  });
}

export function hex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

/** The body Hermes sends (Hermes Agent, plugins/platforms/a2a/tools.py), as an object. */
export function hermesBody(text: string, contextId: string, messageId = hex(16)) {
  return {
    jsonrpc: '2.0',
    id: `task-${hex(8)}`,
    method: 'SendMessage' as const,
    params: { message: { role: 'ROLE_USER', parts: [{ text, mediaType: 'text/plain' }], messageId, contextId } },
  };
}

/**
 * Starts the bridge on loopback against a running Dovecot, a loopback webhook receiver that
 * verifies with the official standardwebhooks library, and a DNS zone serving the agent's DKIM
 * key; plus an official @a2a-js/sdk client. Real parts only.
 */
export async function startHarness(o: HarnessOptions): Promise<Harness> {
  const key = generateDkimKey();
  const zone = await startDnsZone([{ name: dkimTxtName(SELECTOR, AGENT_DOMAIN), type: 'TXT', data: key.publicKeyTxt }]);
  const receiver = await startWebhookReceiver({ secret: TEST_WEBHOOK_SECRET, bearer: TEST_WEBHOOK_BEARER, respond: o.respond });
  const configDir = makeConfigDir(harnessToml({ ...o, zoneAddress: zone.address, webhookUrl: receiver.url }));
  // The harness's Dovecot has its own password: write it over the default one.
  const { writeSecret } = await import('./config-dir.js');
  writeSecret(configDir.dir, 'imap-password', o.dovecot.password);
  const config = loadConfig(configDir.configPath);
  const imapCommands: string[] = [];
  const capture = (entry: { src?: string; msg?: string }) => {
    if (entry?.src === 'c' && typeof entry.msg === 'string') imapCommands.push(entry.msg);
  };
  const imapLogger = { debug: capture, info: capture, warn: () => {}, error: () => {}, trace: () => {}, fatal: () => {} };
  let offset = 0;
  const frozenAt = o.frozenClock ? Date.now() : undefined;
  const authedFetch: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${TEST_BEARER}`);
    return fetch(input, { ...init, headers });
  };
  const boot = async () => {
    const app = await startApp(config, {
      log: createLogger('silent'),
      now: () => (frozenAt ?? Date.now()) + offset,
      ...(o.upkeepEveryMs !== undefined ? { upkeepEveryMs: o.upkeepEveryMs } : {}),
      ...(o.watchLingerMs !== undefined ? { watchLingerMs: o.watchLingerMs } : {}),
      // As serve opens it (src/app.ts openMailbox): the session kept between checks, on the bridge clock.
      mailbox: new ImapMailbox({ ...config.mailbox.imap!, folder: config.mailbox.folder! }, imapLogger, { keepSession: true, now: () => (frozenAt ?? Date.now()) + offset }),
    });
    await app.bridge.idle(); // the start-up refresh: tests start from a settled bridge
    const endpoint = app.server.endpoint(config.agents[0]!);
    const client = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl: authedFetch })] }),
    ).createFromUrl(`${endpoint}/`);
    return { app, endpoint, client };
  };
  const first = await boot();

  const h: Harness = {
    ...first,
    config,
    configDir,
    receiver,
    zone,
    endpointOf: (name) => {
      const a = config.agents.find((x) => x.name === name);
      if (!a) throw new Error(`no agent ${name}`);
      return h.app.server.endpoint(a);
    },
    async restart() {
      await h.app.close();
      Object.assign(h, await boot());
    },
    imapCommands,
    advance: (ms) => void (offset += ms),
    envelope: (n) => {
      const r = receiver.requests[n - 1];
      if (!r?.envelope) throw new Error(`no webhook request #${n}`);
      return r.envelope;
    },
    reply: (envelope, over = {}) => agentReply(envelope, key.privateKeyPem, over),
    rpc: async (body, headers = {}, url = h.endpoint) => {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}`, 'a2a-version': '1.0', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await res.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = text;
      }
      return { status: res.status, json: json as RpcAnswer<ResultOfBody<typeof body>>, headers: res.headers };
    },
    async close() {
      await h.app.close();
      await receiver.close();
      await zone.close();
    },
  };
  return h;
}

/**
 * For a test file: starts a private Dovecot and a harness before its tests and stops both after.
 * Read `env.h` and `env.dovecot` inside the tests (they are set once `beforeAll` has run).
 */
export function useHarness(o: Omit<HarnessOptions, 'dovecot'> = {}): { readonly h: Harness; readonly dovecot: DovecotHandle } {
  const env = {} as { h: Harness; dovecot: DovecotHandle };
  beforeAll(async () => {
    env.dovecot = await startDovecot();
    env.h = await startHarness({ ...o, dovecot: env.dovecot });
  });
  afterAll(async () => {
    await env.h?.close();
    await env.dovecot?.stop();
  });
  return env;
}

/**
 * For a test file whose tests each need their own bridge: a private Dovecot for the file, and
 * `start(o)` for a harness on it that is closed, its config folder removed, after the test that
 * started it.
 */
export function useHarnesses(): { start(o?: Omit<HarnessOptions, 'dovecot'>): Promise<Harness>; readonly dovecot: DovecotHandle } {
  const live: Harness[] = [];
  const env = {
    dovecot: undefined as unknown as DovecotHandle,
    async start(o: Omit<HarnessOptions, 'dovecot'> = {}): Promise<Harness> {
      const h = await startHarness({ ...o, dovecot: env.dovecot });
      live.push(h);
      return h;
    },
  };
  beforeAll(async () => {
    env.dovecot = await startDovecot();
  });
  afterEach(async () => {
    for (const h of live.splice(0)) {
      await h.close();
      rmSync(h.configDir.dir, { recursive: true, force: true });
    }
  });
  afterAll(async () => {
    await env.dovecot?.stop();
  });
  return env;
}
