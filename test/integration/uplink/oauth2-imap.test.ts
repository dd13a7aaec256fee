/**
 * OAuth2 sign-in for IMAP against Dovecot's `oauth2` passdb, whose token introspection
 * (and the token and device endpoints) a loopback server started here plays. Login with an access
 * token from the refresh token file; refresh before expiry on the bridge's clock; one retry with a
 * new token after the server refused one; a revoked grant named with the command that fixes it in
 * the mailbox error, /health, the status text and doctor; `auth login` through the device flow;
 * and no token in any log line (the bridge's and imapflow's).
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { health } from '../../../src/a2a/health.js';
import { storeFingerprint } from '../../../src/core/store-fingerprint.js';
import { startApp, type App } from '../../../src/app.js';
import { doctor } from '../../../src/cli/doctor.js';
import { loadConfig, type Config } from '../../../src/config/config.js';
import { checkMailbox } from '../../../src/core/mail-check.js';
import { statusText } from '../../../src/core/status-text.js';
import { REDACT_PATHS } from '../../../src/log.js';
import { ImapMailbox } from '../../../src/uplink/imap-mailbox.js';
import { MailboxError, type CheckRequest } from '../../../src/uplink/mailbox.js';
import { OAuth2RetryMailbox, tokenSourceFor } from '../../../src/uplink/oauth2.js';
import { runCli } from '../../helpers/cli.js';
import { makeConfigDir, minimalToml, writeSecret, type ConfigDir } from '../../helpers/config-dir.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { startOAuthServer, type OAuthServer } from '../../helpers/oauth-server.js';

const REQ: CheckRequest = { watermark: { uidValidity: null, lastUid: 0 }, fromAddresses: ['agent@agent.example'], subjectContains: [], maxFetch: 10, maxMessageBytes: 1 << 20 };
const REFRESH = `rt-initial-${'z'.repeat(24)}`;

function oauthConfig(dovecot: DovecotHandle, server: OAuthServer): ConfigDir {
  const toml = minimalToml()
    .replace('kind = "maildir"\n', '')
    .replace(
      '[mailbox.maildir]\npath = "Maildir"',
      `kind = "imap"\nprovider = "gmail"\n[mailbox.imap]\nhost = "127.0.0.1"\nport = ${dovecot.port}\ntls = false\nuser = "${dovecot.user}"\nauth = "oauth2"\noauth2_client_id = "test-client"\noauth2_token_url = "${server.tokenUrl}"\noauth2_device_url = "${server.deviceUrl}"\noauth2_refresh_token_file = "imap-refresh-token"`,
    );
  const dir = makeConfigDir(toml);
  writeSecret(dir.dir, 'imap-refresh-token', REFRESH);
  return dir;
}

/** Every line a pino logger writes, kept for the no-token check. */
function capture(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  return { lines, stream: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString('utf8')), cb()) }) };
}

describe('OAuth2 sign-in for IMAP', () => {
  let server: OAuthServer;
  let dovecot: DovecotHandle;
  let dir: ConfigDir;
  let config: Config;
  let clock = Date.parse('2026-03-04T09:00:00Z');
  const now = (): number => clock;
  const logs = capture();

  beforeAll(async () => {
    server = await startOAuthServer({ username: 'mailbridge', clientId: 'test-client' });
    server.refreshTokens.add(REFRESH);
    dovecot = await startDovecot({ oauth2: { introspectionUrl: server.introspectionUrl } });
    await dovecot.append('From: agent@agent.example\r\nSubject: hello\r\nMessage-ID: <a@agent.example>\r\n\r\nhi\r\n');
    dir = oauthConfig(dovecot, server);
    config = loadConfig(dir.configPath);
  });
  afterAll(async () => {
    await dovecot?.stop();
    await server?.close();
  });

  /** The mailbox as the bridge opens it, with imapflow's own log lines captured too. */
  function mailbox(): OAuth2RetryMailbox {
    const imapLog = pino({ level: 'trace', redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, logs.stream);
    return new OAuth2RetryMailbox(new ImapMailbox({ ...config.mailbox.imap!, folder: 'INBOX' }, imapLog), tokenSourceFor(config.mailbox.imap!.oauth2!, 'mailbridge', now));
  }

  it('reads the config: auth = "oauth2", the refresh token from its 0600 file, loopback endpoints', () => {
    expect(config.mailbox.imap!.password).toBe('');
    expect(config.mailbox.imap!.oauth2).toMatchObject({ provider: 'google', clientId: 'test-client', refreshToken: REFRESH, scope: 'https://mail.google.com/' });
  });

  it('logs in with an access token, and refreshes it only when it is about to expire (bridge clock)', async () => {
    const m = mailbox();
    const first = await m.check(REQ);
    expect(first.messages).toHaveLength(1);
    expect(server.refreshRequests).toBe(1);
    // Dovecot's oauth2 passdb asked the introspection endpoint about the token we sent (XOAUTH2/OAUTHBEARER).
    expect(server.bodies.some((b) => b.includes(`token=${server.issued[0]!.token}`))).toBe(true);
    await m.check(REQ);
    clock += 3000_000; // 50 of 60 minutes: still valid
    await m.check(REQ);
    expect(server.refreshRequests).toBe(1);
    clock += 300_000; // 55 minutes: inside the last 10 % of the lifetime
    await m.check(REQ);
    expect(server.refreshRequests).toBe(2);
    expect(server.issued.map((t) => t.token)).toHaveLength(2);
  });

  it('after the server refuses the access token, refreshes once and logs in', async () => {
    const m = mailbox();
    server.deactivate(server.issued.at(-1)!.token);
    const before = server.refreshRequests;
    const r = await m.check(REQ);
    expect(r.messages).toHaveLength(1);
    expect(server.refreshRequests).toBe(before + 1);
  });

  it('a revoked grant fails the check with the command that fixes it: in the error, /health, the status text and doctor', async () => {
    server.refreshTokens.clear();
    server.deactivate(server.issued.at(-1)!.token);
    const err = await mailbox().check(REQ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MailboxError);
    expect((err as MailboxError).kind).toBe('auth');
    expect((err as MailboxError).message).toMatch(/OAuth2 sign-in for mailbridge is no longer valid \(invalid_grant.*sign in again with: a2a-mailbridge --config \S+ auth login google/);

    const bridgeLog = capture();
    let app: App | undefined;
    try {
      app = await startApp(config, { log: pino({ level: 'trace', redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, bridgeLog.stream), now, mailbox: mailbox() });
      const summary = await checkMailbox(app.bridge.ctx);
      expect(summary.ok).toBe(false);
      const h = health(app.bridge, storeFingerprint(config.store.path, config.server.bearer)) as { status: string; mailbox: { lastError: string } };
      expect(h.status).toBe('degraded');
      expect(h.mailbox.lastError).toContain(`a2a-mailbridge --config ${config.file} auth login google`);
      const db = app.bridge.ctx.store;
      db.tx((tx) => tx.tasks.insert({ id: '3f6b1c2e-8d4a-4b7e-9a15-c2d3e4f5a6b7', agent: 'grok', contextId: 'ctx', state: 'WORKING', stateReason: null, failedBy: null, turn: 1, caller: null, createdAt: clock, updatedAt: clock, deadlineAt: clock + 3600_000 }));
      const text = statusText({ task: db.tasks.get('3f6b1c2e-8d4a-4b7e-9a15-c2d3e4f5a6b7')!, agent: config.agents[0]!, turn: undefined, lastAttempt: undefined, mailbox: db.mailbox.state('INBOX'), progressNote: null, lateReplyAt: null, configFile: config.file, now: clock });
      expect(text).toMatch(/The mailbox is unreachable since .*a2a-mailbridge --config \S+ auth login google/);
    } finally {
      await app?.close();
    }
    logs.lines.push(...bridgeLog.lines);

    const report = await doctor(dir.configPath);
    const check = report.checks.find((c) => c.name === 'mailbox')!;
    expect(check.status).toBe('fail');
    expect(check.fix).toBe(`sign in again: a2a-mailbridge --config ${dir.configPath} auth login google`);
  });

  it('auth login runs the device flow, prints the URL and code (never a token), and stores the refresh token 0600', async () => {
    const r = await runCli(['--config', dir.configPath, 'auth', 'login', 'google']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/open http:\/\/127\.0\.0\.1\/verify and enter the code WDJB-MJHT/);
    const file = join(dir.dir, 'imap-refresh-token');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8').trim()).toMatch(/^rt-device-y+$/);
    for (const t of [...server.issued.map((x) => x.token), ...server.refreshTokens]) expect(r.stdout + r.stderr).not.toContain(t);
    // The running token source reads the new grant at its next refresh: no restart needed.
    server.deactivate(server.issued.at(-1)!.token);
    const after = await mailbox().check(REQ);
    expect(after.messages).toHaveLength(1);
    const wrong = await runCli(['--config', dir.configPath, 'auth', 'login', 'microsoft']);
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toMatch(/signs in with google/);
  });

  it('wrote no access or refresh token into any log line', () => {
    expect(logs.lines.length).toBeGreaterThan(20);
    const secrets = [REFRESH, ...server.refreshTokens, ...server.issued.map((t) => t.token)];
    for (const line of logs.lines) for (const s of secrets) expect(line).not.toContain(s);
    // The config file never held one either.
    expect(readFileSync(dir.configPath, 'utf8')).not.toMatch(/at-\d|rt-/);
  });
});

