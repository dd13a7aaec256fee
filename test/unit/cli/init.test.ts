import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { configHeader, generateBearer, generateSigningSecret, initFiles, PLACEHOLDER_PREFIX } from '../../../src/cli/init.js';
import { readSecretFile, SecretFileError } from '../../../src/config/secret-file.js';
import { loadConfig } from '../../../src/config/config.js';

const example = readFileSync('mailbridge.example.toml', 'utf8');
const AT = Date.parse('2026-06-01T12:00:00Z');

describe('init: what it writes', () => {
  it('generates a 32-byte hex bearer and a whsec_ secret of 32 random bytes, fresh each time', () => {
    const b = generateBearer();
    expect(b).toMatch(/^[0-9a-f]{64}$/);
    expect(generateBearer()).not.toBe(b);
    const s = generateSigningSecret();
    expect(s).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(s.slice(6), 'base64')).toHaveLength(32);
    expect(generateSigningSecret()).not.toBe(s);
  });

  it('the config is the example with a header, and loads once the placeholders are filled', () => {
    const files = initFiles(example, AT);
    expect(files.map((f) => f.path)).toEqual(['config.toml', 'secrets/bearer', 'secrets/webhook-secret', 'secrets/imap-password']);
    const config = files[0]!.content;
    expect(config.startsWith(configHeader(AT))).toBe(true);
    expect(config.endsWith(example)).toBe(true);
    expect(() => parseToml(config)).not.toThrow();
    const dir = mkdtempSync(join(tmpdir(), 'mb-init-unit-'));
    mkdirSync(join(dir, 'secrets'));
    for (const f of files) writeFileSync(join(dir, f.path), f.content, { mode: 0o600 });
    // As written, the loader refuses the IMAP password placeholder and names the file.
    expect(() => loadConfig(join(dir, 'config.toml'))).toThrow(/mailbox\.imap\.password_file: .*still holds the placeholder/);
    writeFileSync(join(dir, 'secrets/imap-password'), 'app-password\n');
    const cfg = loadConfig(join(dir, 'config.toml'));
    expect(cfg.server.bearer).toMatch(/^[0-9a-f]{64}$/);
    expect(cfg.agents[0]!.webhook.signingSecret).toMatch(/^whsec_/);
    expect(cfg.store.path).toBe(join(dir, 'state', 'mailbridge.sqlite'));
    expect(cfg.mailbox.watch).toBe(true); // a service moves replies, retries and deadlines on its own
    rmSync(dir, { recursive: true, force: true });
  });

  it('names the listen address once, in `listen`: no comment keeps an old port once the user changes it (fresh-user trial)', () => {
    for (const maildir of [undefined, '/m/Maildir']) {
      const config = initFiles(example, AT, '', maildir)[0]!.content;
      const listen = (parseToml(config) as { server: { listen: string } }).server.listen;
      const [host, port] = [listen.slice(0, listen.lastIndexOf(':')), listen.slice(listen.lastIndexOf(':') + 1)];
      const naming = config.split('\n').filter((l) => l.includes(host) || new RegExp(`\\b${port}\\b`).test(l));
      expect(naming).toEqual([`listen = "${listen}"`]);
      // What a new user needs stays: where each agent is served.
      expect(config).toMatch(/^name = "grok" +# served at \/agents\/grok on the listen address/m);
    }
  });

  it('with a Maildir (init --maildir): kind "maildir", [mailbox.maildir] path, no IMAP keys or password file; loads as written', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mb-init-maildir-'));
    const maildir = join(dir, 'Mail "agent" replies');
    const files = initFiles(example, AT, '', maildir);
    expect(files.map((f) => f.path)).toEqual(['config.toml', 'secrets/bearer', 'secrets/webhook-secret']);
    const config = files[0]!.content;
    expect(config.startsWith(configHeader(AT, '', maildir))).toBe(true);
    const mailbox = (parseToml(config) as { mailbox: Record<string, unknown> }).mailbox;
    expect(mailbox.kind).toBe('maildir');
    expect(mailbox.maildir).toEqual({ path: maildir });
    expect(mailbox).not.toHaveProperty('imap');
    expect(mailbox).not.toHaveProperty('folder');
    mkdirSync(join(dir, 'secrets'));
    for (const f of files) writeFileSync(join(dir, f.path), f.content, { mode: 0o600 });
    // No placeholder to fill: the loader takes it as written.
    const cfg = loadConfig(join(dir, 'config.toml'));
    expect(cfg.mailbox.kind).toBe('maildir');
    expect(cfg.mailbox.maildirPath).toBe(maildir);
    expect(cfg.mailbox.imap).toBeUndefined();
    expect(cfg.mailbox.watch).toBe(true);
    rmSync(dir, { recursive: true, force: true });
  });

  it('the placeholder is one the loader refuses', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mb-init-ph-'));
    const placeholders = initFiles(example, AT).filter((f) => f.content.startsWith(PLACEHOLDER_PREFIX));
    expect(placeholders.map((f) => f.path)).toEqual(['secrets/imap-password']);
    for (const f of placeholders) {
      const p = join(dir, f.path.replace('secrets/', ''));
      writeFileSync(p, f.content, { mode: 0o600 });
      expect(() => readSecretFile(p, 'k'), f.path).toThrow(SecretFileError);
    }
    rmSync(dir, { recursive: true, force: true });
  });
});
