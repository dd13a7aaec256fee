import { copyFileSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { writeSecret } from '../../helpers/config-dir.js';

describe('mailbridge.example.toml', () => {
  it('is a valid config once its secret files exist', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mb-example-'));
    copyFileSync('mailbridge.example.toml', join(dir, 'mailbridge.toml'));
    mkdirSync(join(dir, 'secrets'), { mode: 0o700 });
    writeSecret(join(dir, 'secrets'), 'bearer', 'a-long-enough-bearer-token');
    writeSecret(join(dir, 'secrets'), 'imap-password', 'app-password');
    writeSecret(join(dir, 'secrets'), 'webhook-secret', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw+AAAAAAAAAA=');
    const cfg = loadConfig(join(dir, 'mailbridge.toml'));
    expect(cfg.server).toMatchObject({ host: '127.0.0.1', port: 8765 });
    expect(cfg.mailbox.imap).toMatchObject({ host: 'imap.fastmail.com', port: 993, tls: true });
    expect(cfg.agents.map((a) => a.name)).toEqual(['grok']);
    // What init writes runs as a service: replies, retries and deadlines move without a caller.
    expect(cfg.mailbox.watch).toBe(true);
  });
});
