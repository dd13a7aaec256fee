/**
 * `a2a-mailbridge provider detect` names the right preset for a sample of
 * each provider, and for a self-hosted sample prints patterns that work: its output is pasted into
 * a config, which then promotes a genuine reply through the real mailbox path. `--from` reads the
 * newest message of a sender from Dovecot read-only (EXAMINE, BODY.PEEK: no flag changes).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';
import { runCli } from '../../helpers/cli.js';
import { freePort } from '../../helpers/free-port.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { judgeThroughMailbox, PROVIDER_CORPUS_DIR, readProviderMessage } from '../../helpers/provider-corpus.js';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';

const SAMPLES = [
  ['fastmail', '../corpus/05-genuine-fastmail-full-layout.eml'],
  ['gmail', 'gmail/01-genuine-done.eml'],
  ['outlook', 'outlook/01-genuine-done.eml'],
  ['outlook', 'outlook/07-genuine-older-form-with-domain-slots.eml'],
  ['icloud', 'icloud/02-genuine-via-relay-two-signatures.eml'],
  ['yahoo', 'yahoo/01-genuine-done.eml'],
  ['self-hosted', 'self-hosted/01-genuine-done.eml'],
] as const;

describe('provider detect', () => {
  it.each(SAMPLES)('names %s for %s', async (preset, file) => {
    const r = await runCli(['provider', 'detect', '--file', join(PROVIDER_CORPUS_DIR, file), '--json']);
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { preset: string; config: string[]; notes: string[] };
    expect(out.preset).toBe(preset);
    expect(out.config[0]).toBe(`provider = "${preset}"`);
  });

  it('prints self-hosted patterns that, pasted into a config, promote a genuine reply (and refuse a forged one)', async () => {
    const r = await runCli(['provider', 'detect', '--file', join(PROVIDER_CORPUS_DIR, 'self-hosted/02-genuine-via-relay-two-signatures.eml')]);
    expect(r.status, r.stderr).toBe(0);
    const pasted = r.stdout.split('\n').filter((l) => /^ {2}(provider|authserv_id|border_host) = /.test(l)).map((l) => l.trim());
    expect(pasted).toEqual(['provider = "self-hosted"', "authserv_id = 'mail\\.person\\.example'", "border_host = 'mail\\.person\\.example'"]);
    const genuine = await judgeThroughMailbox(readProviderMessage('self-hosted/01-genuine-done.eml'), pasted.join('\n'), { kind: 'maildir', n: 1, expectProvider: 'self-hosted' });
    expect(genuine.verdict, genuine.reason).toBe('applied:done');
    const forged = await judgeThroughMailbox(readProviderMessage('self-hosted/03-forged-pass-stamp-under-the-provider.eml'), pasted.join('\n'), { kind: 'maildir', n: 2 });
    expect(forged.verdict).toBe('auth:dmarc-fail');
  });

  it('explains a self-hosted MTA whose milter writes its results under its Received, and exits 1', async () => {
    const r = await runCli(['provider', 'detect', '--file', join(PROVIDER_CORPUS_DIR, 'self-hosted/07-milter-writes-results-below-its-received.eml')]);
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/under its own Received.*RFC 8601 §5/);
  });

  it('says that ARC-* and *-Original fields are never trusted', async () => {
    const gmail = await runCli(['provider', 'detect', '--file', join(PROVIDER_CORPUS_DIR, 'gmail/07-forged-arc-authentication-results.eml')]);
    expect(gmail.stdout).toMatch(/ignored ARC-Authentication-Results #\d+: ARC-\* fields/);
    const ms = await runCli(['provider', 'detect', '--file', join(PROVIDER_CORPUS_DIR, 'outlook/09-sender-written-ar-original.eml')]);
    expect(ms.stdout).toMatch(/ignored Authentication-Results-Original #\d+/);
  });

  it('--from with a mailbox that cannot be reached: one line with the fix, exit 1, no stack', async () => {
    const port = await freePort(); // nothing listens there: the connection is refused
    const toml = minimalToml()
      .replace('kind = "maildir"\n', '')
      .replace('[mailbox.maildir]\npath = "Maildir"', `kind = "imap"\n[mailbox.imap]\nhost = "127.0.0.1"\nport = ${port}\ntls = false\nuser = "u"\npassword_file = "imap-password"`);
    const dir = makeConfigDir(toml);
    const r = await runCli(['--config', dir.configPath, 'provider', 'detect', '--from', 'agent@agent.example']);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(`a2a-mailbridge: IMAP read of INBOX on 127.0.0.1:${port} failed: ECONNREFUSED; check mailbox.imap.host and port, and that this machine can reach the server\n`);
  });

  describe('--from, read-only from the configured mailbox', () => {
    let dovecot: DovecotHandle;
    beforeAll(async () => {
      dovecot = await startDovecot();
    });
    afterAll(async () => {
      await dovecot?.stop();
    });

    it('reads the newest message from the sender over IMAP without changing a flag', async () => {
      await dovecot.append(readProviderMessage('yahoo/01-genuine-done.eml'));
      const uid = await dovecot.append(readProviderMessage('gmail/01-genuine-done.eml'));
      const before = await dovecot.flagsOf(uid);
      const toml = minimalToml()
        .replace('kind = "maildir"\n', '')
        .replace('[mailbox.maildir]\npath = "Maildir"', `kind = "imap"\n[mailbox.imap]\nhost = "127.0.0.1"\nport = ${dovecot.port}\ntls = false\nuser = "${dovecot.user}"\npassword_file = "imap-password"`);
      const dir = makeConfigDir(toml);
      writeFileSync(join(dir.dir, 'imap-password'), `${dovecot.password}\n`, { mode: 0o600 });
      const r = await runCli(['--config', dir.configPath, 'provider', 'detect', '--from', 'agent@agent.example']);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/provider: gmail/);
      expect(await dovecot.flagsOf(uid)).toEqual(before);
      const none = await runCli(['--config', dir.configPath, 'provider', 'detect', '--from', 'nobody@elsewhere.example']);
      expect(none.status).toBe(1);
      expect(none.stderr).toMatch(/no message from nobody@elsewhere\.example/);
    });
  });
});
