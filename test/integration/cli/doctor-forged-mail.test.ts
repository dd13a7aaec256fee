/**
 * The whole `doctor` on a config where every other check passes, with the agent's latest tagged
 * mail a forgery anyone can send to the mailbox (an Authentication-Results stamp below the border,
 * the provider's own stamp missing): a warning, and `doctor` exits 0 (fresh-user trial: it exited
 * 1 and pointed at `provider detect`). Genuine agent mail that the config cannot trust still fails
 * it. DKIM keys come from the corpus zone on a loopback DNS server (`[dns] servers`), the webhook
 * check connects to a loopback listener.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { doctor } from '../../../src/cli/doctor.js';
import { loadConfig } from '../../../src/config/config.js';
import { startDnsZone, type DnsZone } from '../../../src/demo/dns-zone.js';
import { Store } from '../../../src/store/store.js';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';
import { loadZone, readMessage } from '../../helpers/corpus.js';
import { readProviderMessage } from '../../helpers/provider-corpus.js';

let zone: DnsZone;
let hook: Server;
const dirs: string[] = [];

beforeAll(async () => {
  zone = await startDnsZone(loadZone().records);
  hook = createServer((s) => s.destroy()).listen(0, '127.0.0.1');
  await new Promise((resolve) => hook.once('listening', resolve));
});
afterAll(async () => {
  await zone.close();
  await new Promise((resolve) => hook.close(resolve));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A config whose every check passes but the latest agent mail's (and the example names' warning), with `mail` as that mail. */
async function doctorWith(mail: Buffer) {
  const port = (hook.address() as { port: number }).port;
  const c = makeConfigDir(`${minimalToml({ webhookUrl: `http://127.0.0.1:${port}/hook` })}\n[dns]\nservers = ["${zone.address}"]\n`);
  dirs.push(c.dir);
  const config = loadConfig(c.configPath);
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(config.mailbox.maildirPath!, sub), { recursive: true, mode: 0o700 });
  mkdirSync(join(c.dir, 'state'), { mode: 0o700 });
  const db = Store.open(config.store.path);
  const sha = createHash('sha256').update(mail).digest('hex');
  db.tx((tx) => tx.ledger.record({
    source: `maildir:x:${sha.slice(0, 8)}`, seenAt: Date.parse('2025-03-04T10:00:00Z'), messageId: null, fromHeader: null, subject: null, dateHeader: null,
    size: mail.length, rawSha256: sha, raw: mail, agent: 'grok', taskId: '3f6b1c2e-8d4a-4b7e-9a15-c2d3e4f5a6b7',
    verdict: 'auth:no-trusted-results', reason: 'gate 5', receivedAt: Date.parse('2025-03-04T09:52:00Z'),
  }));
  db.close();
  return doctor(c.configPath);
}

describe('doctor with a forged latest agent mail', () => {
  it('warns and passes (exit 0) when everything else is ok', async () => {
    const r = await doctorWith(readMessage('51-provider-wrote-no-ar-forged-one-below.eml'));
    expect(r.checks.filter((c) => c.status === 'fail')).toEqual([]);
    expect(r.checks.find((c) => c.name === 'latest agent mail')).toMatchObject({ status: 'warn', detail: expect.stringContaining("carries no sign that it is the agent's") as unknown });
    expect(r.ok).toBe(true);
  });

  it('still fails on genuine agent mail the config cannot trust (a Gmail reply under the default preset)', async () => {
    const r = await doctorWith(readProviderMessage('gmail/01-genuine-done.eml'));
    expect(r.checks.filter((c) => c.status === 'fail').map((c) => c.name)).toEqual(['latest agent mail']);
    expect(r.ok).toBe(false);
  });
});
