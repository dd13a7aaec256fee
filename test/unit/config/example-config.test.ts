import { copyFileSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { effectiveConfig, loadConfig } from '../../../src/config/config.js';
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

  it('names every key the loader reads for it (set, or commented out with its default)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mb-example-'));
    copyFileSync('mailbridge.example.toml', join(dir, 'mailbridge.toml'));
    const cfg = loadConfig(join(dir, 'mailbridge.toml'), { skipSecrets: true });
    const text = readFileSync('mailbridge.example.toml', 'utf8');
    const keys: string[] = [];
    const walk = (v: unknown, at: string): void => {
      if (Array.isArray(v) && v.some((x) => typeof x === 'object')) v.forEach((x) => walk(x, at));
      else if (v !== null && typeof v === 'object' && !Array.isArray(v)) for (const [k, x] of Object.entries(v)) walk(x, at ? `${at}.${k}` : k);
      else keys.push(at);
    };
    walk(effectiveConfig(cfg), '');
    // A key as `key = …`, or an array of tables as its `[[table.key]]` header.
    const named = (k: string): boolean => new RegExp(`^#? ?${k.split('.').at(-1)} = `, 'm').test(text) || text.includes(`[[${k}]]`);
    const missing = keys.filter((k) => !named(k));
    expect(missing).toEqual([]);
  });
});
