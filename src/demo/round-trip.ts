import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type App } from '../app.js';
import { loadConfig } from '../config/config.js';
import { createLogger } from '../log.js';
import { queryLedger } from '../store/ledger.js';
import { deliverToMaildir } from '../uplink/maildir-mailbox.js';
import { startCloudAgent, type CloudAgent } from './cloud-agent.js';
import { startDnsZone, type DnsZone } from './dns-zone.js';
import { dkimTxtName, generateDkimKey } from './reply-mail.js';

const AGENT = 'demo';
const AGENT_ADDRESS = 'agent@agent.example';
const AGENT_DOMAIN = 'agent.example';
const SELECTOR = 'demo2026';

export interface DemoOptions {
  /** Print the bridge's JSON log lines to stderr. */
  verbose?: boolean;
  /** Where to write the transcript; stdout by default. */
  out?: (line: string) => void;
}

function hex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

/**
 * The caller side as Hermes does it (FACTS.md "Hermes"): a new messageId per call, the same
 * contextId, one text part, never a taskId. The SDK takes its in-memory form (role 1 = ROLE_USER,
 * parts as `{content: {$case, value}}`) and writes the ProtoJSON.
 */
function hermesMessage(text: string, contextId: string) {
  return {
    message: { role: 1, parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain' }], messageId: hex(16), contextId },
  };
}

type SdkPart = { content?: { $case: string; value: unknown } };
type SdkTask = { id: string; status: { state: number; message?: { parts?: SdkPart[] } }; artifacts?: { parts?: SdkPart[] }[] };

/** The SDK's SendMessage result is a Task or a Message; the demo expects a Task. */
function asTask(r: unknown): SdkTask {
  if (typeof r !== 'object' || r === null || !('status' in r)) throw new Error(`expected a Task, got ${JSON.stringify(r)}`);
  return r as SdkTask;
}

/** The text Hermes shows: the first text artifact, else status.message (FACTS.md "Hermes"). */
function shownText(task: SdkTask): string {
  const fromParts = (parts: SdkPart[] | undefined): string | undefined =>
    parts?.find((p) => p.content?.$case === 'text')?.content?.value as string | undefined;
  for (const a of task.artifacts ?? []) {
    const t = fromParts(a.parts);
    if (t !== undefined) return t;
  }
  return fromParts(task.status?.message?.parts) ?? '';
}

const STATE_NAMES = ['UNSPECIFIED', 'SUBMITTED', 'WORKING', 'COMPLETED', 'FAILED', 'CANCELED', 'INPUT_REQUIRED', 'REJECTED', 'AUTH_REQUIRED'];

/**
 * `a2a-mailbridge demo`: a full round trip on loopback (issue 2). It writes a real config with
 * 0600 secret files into a temporary folder, starts a DNS zone serving the agent's DKIM key, a
 * simulated cloud agent (a webhook receiver that verifies the Standard Webhooks signature and the
 * bearer, then writes a DKIM-signed, provider-stamped reply into a Maildir), and the bridge; then
 * drives the bridge with the official A2A client the way Hermes does. Everything is removed after.
 *
 * @returns true when the second call came back COMPLETED with the labelled reply
 */
export async function demo(o: DemoOptions = {}): Promise<boolean> {
  const out = o.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const dir = mkdtempSync(join(tmpdir(), 'a2a-mailbridge-demo-'));
  let zone: DnsZone | undefined;
  let agent: CloudAgent | undefined;
  let app: App | undefined;
  try {
    const bridgeBearer = hex(24);
    const signingSecret = `whsec_${randomBytes(32).toString('base64')}`;
    const agentBearer = hex(24);
    for (const [name, value] of [['bearer', bridgeBearer], ['webhook-secret', signingSecret], ['webhook-bearer', agentBearer]]) {
      writeFileSync(join(dir, name!), `${value}\n`, { mode: 0o600 });
    }
    const maildir = join(dir, 'Maildir');
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(maildir, sub), { recursive: true, mode: 0o700 });

    const key = generateDkimKey();
    zone = await startDnsZone([{ name: dkimTxtName(SELECTOR, AGENT_DOMAIN), type: 'TXT', data: key.publicKeyTxt }]);
    agent = await startCloudAgent({
      address: AGENT_ADDRESS,
      dkim: { domain: AGENT_DOMAIN, selector: SELECTOR, privateKeyPem: key.privateKeyPem },
      deliver: async (raw) => void (await deliverToMaildir(maildir, raw)),
      bearer: agentBearer,
      signingSecret,
      replyDelayMs: 300,
    });

    const configFile = join(dir, 'config.toml');
    writeFileSync(
      configFile,
      `# Written by a2a-mailbridge demo; removed when it ends.
[server]
listen = "127.0.0.1:0"
bearer_file = "bearer"

[store]
path = "state/demo.sqlite"

[mailbox]
kind = "maildir"
address = "me@bridge.example"
check_interval_s = 0
[mailbox.maildir]
path = "Maildir"

[dns]
servers = ["${zone.address}"]

[[agents]]
name = "${AGENT}"
address = "${AGENT_ADDRESS}"
dkim_domain = "${AGENT_DOMAIN}"
deadline_s = 600
[agents.webhook]
url = "${agent.url}"
auth = "both"
bearer_file = "webhook-bearer"
secret_file = "webhook-secret"
timeout_s = 5
`,
      { mode: 0o600 },
    );
    const config = loadConfig(configFile);
    app = await startApp(config, { log: createLogger(o.verbose ? 'info' : 'silent') });
    const endpoint = app.server.endpoint(config.agents[0]!);

    const authedFetch: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${bridgeBearer}`);
      return fetch(input, { ...init, headers });
    };
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl: authedFetch })],
      }),
    );
    const client: Client = await factory.createFromUrl(`${endpoint}/`);

    out('a2a-mailbridge demo: a full round trip on loopback');
    out(`  bridge       ${endpoint}  (card: ${endpoint}/.well-known/agent-card.json)`);
    out(`  cloud agent  ${agent.url}  (verifies the Standard Webhooks signature and the bearer)`);
    out(`  mailbox      Maildir ${maildir}  (read-only; replies DKIM-signed by ${AGENT_DOMAIN}, key served by DNS at ${zone.address})`);
    out('');

    const contextId = `ctx-${hex(8)}`;
    const ask = 'Find three recent papers on retrieval-augmented generation and summarise each in one line.';
    out(`1) SendMessage  context ${contextId}`);
    out(`   → ${ask}`);
    const first = await client.sendMessage(hermesMessage(ask, contextId) as never);
    const task1 = asTask(first);
    const state1 = STATE_NAMES[task1.status.state] ?? String(task1.status.state);
    out(`   ← TASK_STATE_${state1}  task ${task1.id}`);
    for (const line of shownText(task1).split('\n')) out(`     ${line}`);
    out('');

    await agent.idle();
    const hook = agent.received[0];
    out(`   cloud agent: webhook ${hook?.id ?? '?'} verified, turn ${hook?.envelope.turn ?? '?'}; reply mailed to ${hook?.envelope.reply_to ?? '?'}`);
    out('');

    out(`2) SendMessage  same context, new messageId (this is a poll)`);
    out('   → status');
    const second = await client.sendMessage(hermesMessage('status', contextId) as never);
    const task2 = asTask(second);
    const state2 = STATE_NAMES[task2.status.state] ?? String(task2.status.state);
    out(`   ← TASK_STATE_${state2}  task ${task2.id}`);
    const shown = shownText(task2);
    for (const line of shown.split('\n')) out(`     ${line}`);
    out('');

    const ledger = queryLedger(app.bridge.ctx.db, { limit: 10 });
    out(`ledger: ${ledger.map((l) => `${l.verdict} (${l.messageId ?? 'no Message-ID'})`).join(', ') || 'empty'}`);
    const ok =
      state1 === 'WORKING' &&
      state2 === 'COMPLETED' &&
      task2.id === task1.id &&
      shown.startsWith(config.agents[0]!.untrustedLabel) &&
      agent.received.length === 1;
    out(ok ? 'demo: OK (one webhook, one authenticated reply, task completed)' : 'demo: FAILED (see above)');
    return ok;
  } finally {
    await app?.close();
    await agent?.close();
    await zone?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
