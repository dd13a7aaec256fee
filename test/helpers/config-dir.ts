import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A temporary folder holding a config file and its 0600 secret files. */
export interface ConfigDir {
  dir: string;
  configPath: string;
  bearer: string;
  webhookSecret: string;
  webhookBearer: string;
}

export const TEST_BEARER = 'test-bearer-0123456789abcdef';
export const TEST_WEBHOOK_SECRET = `whsec_${Buffer.from('test-signing-secret-32-bytes-long!!').toString('base64')}`;
export const TEST_WEBHOOK_BEARER = 'agent-side-bearer-abcdef0123456789';

/** Writes `name` into `dir` with mode 0600 (or `mode`). */
export function writeSecret(dir: string, name: string, value: string, mode = 0o600): string {
  const p = join(dir, name);
  writeFileSync(p, `${value}\n`, { mode });
  return p;
}

/**
 * Creates a folder (in `parent`, the system's temporary folder by default) with the three secrets
 * and a config file whose text is `toml`. The secrets are named `bearer`, `webhook-secret`,
 * `webhook-bearer` and `imap-password` (value `pass`).
 */
export function makeConfigDir(toml: string, parent = tmpdir()): ConfigDir {
  const dir = mkdtempSync(join(parent, 'mb-config-'));
  writeSecret(dir, 'bearer', TEST_BEARER);
  writeSecret(dir, 'webhook-secret', TEST_WEBHOOK_SECRET);
  writeSecret(dir, 'webhook-bearer', TEST_WEBHOOK_BEARER);
  writeSecret(dir, 'imap-password', 'pass');
  const configPath = join(dir, 'mailbridge.toml');
  writeFileSync(configPath, toml);
  return { dir, configPath, bearer: TEST_BEARER, webhookSecret: TEST_WEBHOOK_SECRET, webhookBearer: TEST_WEBHOOK_BEARER };
}

/** A minimal valid config: one agent `grok`, a Maildir mailbox, overridable by appending TOML. */
export function minimalToml(o: { listen?: string; webhookUrl?: string; extraAgent?: string } = {}): string {
  return `
[server]
listen = "${o.listen ?? '127.0.0.1:0'}"
bearer_file = "bearer"

[store]
path = "state/bridge.sqlite"

[mailbox]
kind = "maildir"
address = "me@bridge.test"
[mailbox.maildir]
path = "Maildir"

[[agents]]
name = "grok"
address = "agent@agent.example"
[agents.webhook]
url = "${o.webhookUrl ?? 'http://127.0.0.1:9/hook'}"
auth = "both"
bearer_file = "webhook-bearer"
secret_file = "webhook-secret"
${o.extraAgent ?? ''}
`;
}
