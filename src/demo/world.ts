import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { startApp, type App } from '../app.js';
import { loadConfig, type Config } from '../config/config.js';
import { deliverToMaildir } from '../uplink/maildir-mailbox.js';
import { startCloudAgent, type CloudAgent, type CloudAgentOptions } from './cloud-agent.js';
import { startDnsZone, type DnsZone } from './dns-zone.js';
import { dkimTxtName, generateDkimKey } from './reply-mail.js';

export const DEMO_AGENT = 'demo';
export const DEMO_AGENT_ADDRESS = 'agent@agent.example';
export const DEMO_AGENT_DOMAIN = 'agent.example';
const SELECTOR = 'demo2026';

export interface DemoWorldOptions {
  /** Prefix of the temporary folder's name. */
  name: string;
  log: Logger;
  /** How long the simulated agent works before it mails its reply, in ms. */
  replyDelayMs: number;
  /** Extra TOML lines for [mailbox] (e.g. `watch = true`). */
  mailboxToml?: string;
  /** Extra TOML lines for the agent's table (e.g. `max_open_tasks = 1000`). */
  agentToml?: string;
  /** Extra TOML lines for its [agents.webhook] table (e.g. `max_per_minute = 1000`). */
  webhookToml?: string;
  /** Extra TOML lines for [server] (e.g. `wait_budget_s = 8`). */
  serverToml?: string;
  /** Composes the simulated agent's answer to each envelope (default: the demo's echo, `defaultAnswer`). */
  answer?: CloudAgentOptions['answer'];
}

/** A bridge with everything it talks to, all on loopback, in one temporary folder. */
export interface DemoWorld {
  dir: string;
  maildir: string;
  config: Config;
  app: App;
  agent: CloudAgent;
  zone: DnsZone;
  /** The bridge's bearer, as a caller sends it. */
  bearer: string;
  /** The agent's JSON-RPC URL, as its card names it. */
  endpoint: string;
  /** Stops everything and removes the folder; idempotent (every call resolves once the folder is gone). */
  stop(): Promise<void>;
}

function hex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

/**
 * Sets up the demo's world: a temporary folder with a real config and 0600 secret files (so config
 * loading and the secret-file checks run for real), a DNS zone serving a fresh RSA-2048 DKIM key, a
 * simulated cloud agent (verifies the Standard Webhooks signature and the bearer, then mails a
 * DKIM-signed, provider-stamped reply into a Maildir) and the bridge reading that Maildir. Used by
 * `a2a-mailbridge demo` and by the conformance-kit script.
 *
 * @throws whatever a part throws while starting; the parts already started are stopped first
 */
export async function startDemoWorld(o: DemoWorldOptions): Promise<DemoWorld> {
  const dir = mkdtempSync(join(tmpdir(), `${o.name}-`));
  let zone: DnsZone | undefined;
  let agent: CloudAgent | undefined;
  let app: App | undefined;
  // One stop for every caller: a second call waits for the folder's removal too.
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      await app?.close().catch(() => undefined);
      await agent?.close().catch(() => undefined);
      await zone?.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    })());
  try {
    const bearer = hex(24);
    const signingSecret = `whsec_${randomBytes(32).toString('base64')}`;
    const agentBearer = hex(24);
    for (const [name, value] of [['bearer', bearer], ['webhook-secret', signingSecret], ['webhook-bearer', agentBearer]] as const) {
      writeFileSync(join(dir, name), `${value}\n`, { mode: 0o600 });
    }
    const maildir = join(dir, 'Maildir');
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(maildir, sub), { recursive: true, mode: 0o700 });

    const key = generateDkimKey();
    zone = await startDnsZone([{ name: dkimTxtName(SELECTOR, DEMO_AGENT_DOMAIN), type: 'TXT', data: key.publicKeyTxt }]);
    agent = await startCloudAgent({
      address: DEMO_AGENT_ADDRESS,
      dkim: { domain: DEMO_AGENT_DOMAIN, selector: SELECTOR, privateKeyPem: key.privateKeyPem },
      deliver: async (raw) => void (await deliverToMaildir(maildir, raw)),
      bearer: agentBearer,
      signingSecret,
      replyDelayMs: o.replyDelayMs,
      ...(o.answer ? { answer: o.answer } : {}),
    });
    const configFile = join(dir, 'config.toml');
    writeFileSync(
      configFile,
      `# Written for a loopback demo; removed when it ends.
[server]
listen = "127.0.0.1:0"
bearer_file = "bearer"
${o.serverToml ?? ''}

[store]
path = "state/demo.sqlite"

[mailbox]
kind = "maildir"
address = "me@bridge.example"
check_interval_s = 0
${o.mailboxToml ?? ''}
[mailbox.maildir]
path = "Maildir"

[dns]
servers = ["${zone.address}"]

[[agents]]
name = "${DEMO_AGENT}"
address = "${DEMO_AGENT_ADDRESS}"
dkim_domain = "${DEMO_AGENT_DOMAIN}"
deadline_s = 600
${o.agentToml ?? ''}
[agents.webhook]
url = "${agent.url}"
auth = "both"
bearer_file = "webhook-bearer"
secret_file = "webhook-secret"
timeout_s = 5
${o.webhookToml ?? ''}
`,
      { mode: 0o600 },
    );
    const config = loadConfig(configFile);
    app = await startApp(config, { log: o.log });
    return { dir, maildir, config, app, agent, zone, bearer, endpoint: app.server.endpoint(config.agents[0]!), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
