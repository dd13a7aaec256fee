import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsZone, type DnsZone } from '../../../src/demo/dns-zone.js';
import { Store } from '../../../src/store/store.js';
import { MIGRATIONS } from '../../../src/store/migrations.js';
import { runCli } from '../../helpers/cli.js';
import { TEST_WEBHOOK_SECRET } from '../../helpers/config-dir.js';
import { freePort } from '../../helpers/free-port.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import type { DoctorReport } from '../../../src/cli/doctor.js';

/**
 * As a new user would: `init` → edit → `doctor` reports each check; a wrong IMAP password and a
 * world-readable secret each produce a one-line fix. Real parts: a private Dovecot, a loopback
 * webhook receiver (which must see no request: doctor never wakes the agent), a loopback DNS zone.
 */
let dovecot: DovecotHandle;
let receiver: WebhookReceiver;
let zone: DnsZone;
let root: string;
let dir: string;
let config: string;
let listenPort: number;
/** A port nothing listens on (discard, below the ephemeral range, so no test socket takes it). */
const closedPort = 9;

beforeAll(async () => {
  dovecot = await startDovecot();
  receiver = await startWebhookReceiver({ secret: TEST_WEBHOOK_SECRET });
  zone = await startDnsZone([{ name: 'sel._domainkey.agent.example', type: 'TXT', data: 'v=DKIM1; k=rsa; p=' }]);
  // The edit moves server.listen off init's 8765 to a free port: doctor fails an address in use (a bridge may run on 8765 here).
  listenPort = await freePort();
  root = mkdtempSync(join(tmpdir(), 'mb-init-doctor-'));
  dir = join(root, 'a2a-mailbridge');
  config = join(dir, 'config.toml');
});
afterAll(async () => {
  await receiver?.close();
  await zone?.close();
  await dovecot?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
});

const mode = (p: string): number => statSync(p).mode & 0o777;
const doctor = (env?: NodeJS.ProcessEnv) => runCli(['--config', config, 'doctor'], env ? { env } : {});
/** The report line of one check, and the line after it. */
function line(stdout: string, name: string): { line: string; next: string } {
  const lines = stdout.split('\n');
  const i = lines.findIndex((l) => new RegExp(`^(ok|warn|fail|skip)\\s+${name.replace(/[[\]().]/g, '\\$&')} {2}`).test(l));
  expect(i, `no line for check "${name}" in:\n${stdout}`).toBeGreaterThanOrEqual(0);
  return { line: lines[i]!, next: lines[i + 1] ?? '' };
}

function edit(replacements: [RegExp, string][]): void {
  let text = readFileSync(config, 'utf8');
  for (const [re, to] of replacements) {
    expect(re.test(text), `pattern ${re} not in the config`).toBe(true);
    text = text.replace(re, to);
  }
  writeFileSync(config, text);
}

describe('init → edit → doctor', () => {
  it('init writes a private folder with 0600 secrets and generated bearer and signing secret; a second init overwrites nothing', async () => {
    const r = await runCli(['init', '--dir', dir]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`next: edit ${config}, fill in the placeholders, then run: a2a-mailbridge --config ${config} doctor`);
    expect(mode(dir)).toBe(0o700);
    expect(mode(join(dir, 'secrets'))).toBe(0o700);
    expect(mode(join(dir, 'state'))).toBe(0o700);
    expect(mode(join(dir, 'logs'))).toBe(0o700);
    for (const f of ['config.toml', 'secrets/bearer', 'secrets/webhook-secret', 'secrets/imap-password']) {
      expect(mode(join(dir, f)), f).toBe(0o600);
    }
    // Only the files its config reads: no placeholder for the commented-out webhook bearer_file.
    expect(readdirSync(join(dir, 'secrets')).sort()).toEqual(['bearer', 'imap-password', 'webhook-secret']);
    const bearer = readFileSync(join(dir, 'secrets/bearer'), 'utf8');
    expect(bearer).toMatch(/^[0-9a-f]{64}\n$/);
    expect(r.stdout).not.toContain(bearer.trim());
    expect(readFileSync(join(dir, 'secrets/webhook-secret'), 'utf8')).toMatch(/^whsec_[A-Za-z0-9+/]{43}=\n$/);
    expect(readFileSync(join(dir, 'secrets/imap-password'), 'utf8')).toMatch(/^REPLACE-WITH-/);
    expect(readFileSync(config, 'utf8')).toMatch(/^# Written by `a2a-mailbridge init`/);

    const before = readFileSync(join(dir, 'secrets/bearer'));
    const again = await runCli(['init', '--dir', dir]);
    expect(again.status).toBe(1);
    expect(again.stderr).toBe(`a2a-mailbridge: refusing to overwrite ${config}; move it away, or run init with another --dir\n`);
    expect(readFileSync(join(dir, 'secrets/bearer'))).toEqual(before);
  });

  it('doctor on the fresh config names the placeholder and skips what it cannot check yet', async () => {
    const r = await doctor();
    expect(r.status).toBe(1);
    expect(line(r.stdout, 'secret server.bearer_file').line).toMatch(/^ok /);
    expect(line(r.stdout, 'secret agents[0].webhook.secret_file').line).toMatch(/^ok /);
    const pw = line(r.stdout, 'secret mailbox.imap.password_file');
    expect(pw.line).toMatch(/^fail .*imap-password still holds a placeholder$/);
    expect(pw.next).toBe(`      fix: write your IMAP app password into ${join(dir, 'secrets/imap-password')} (the file stays mode 0600)`);
    expect(line(r.stdout, 'config').line).toMatch(/^skip .*valid apart from the secret file of mailbox\.imap\.password_file$/);
    expect(line(r.stdout, 'store, mailbox, webhook').line).toMatch(/^skip /);
  });

  it('with the placeholder still in place, a second mistake in the config is named too, not hidden behind it', async () => {
    const text = readFileSync(config, 'utf8');
    edit([[/^port = 993$/m, 'port = 99999']]);
    try {
      const r = await doctor();
      expect(r.status).toBe(1);
      expect(line(r.stdout, 'secret mailbox.imap.password_file').line).toMatch(/^fail .*still holds a placeholder$/);
      expect(line(r.stdout, 'config').line).toMatch(/^fail .*mailbox\.imap\.port/);
    } finally {
      writeFileSync(config, text);
    }
  });

  it('after the edit every check passes, the agent is not woken, the example names still in place are a warning, and the Hermes snippet has a placeholder, never the bearer', async () => {
    edit([
      [/^listen = "127\.0\.0\.1:8765"$/m, `listen = "127.0.0.1:${listenPort}"`],
      [/^host = "imap\.fastmail\.com"$/m, 'host = "127.0.0.1"'],
      [/^port = 993$/m, `port = ${dovecot.port}`],
      [/^tls = true$/m, 'tls = false'],
      [/^user = "me@example\.com"$/m, `user = "${dovecot.user}"`],
      [/^url = "https:\/\/hooks\.agent\.example\/trigger"$/m, `url = "${receiver.url}"`],
      [/^# \[dns\]\n# servers = .*$/m, `[dns]\nservers = ["${zone.address}"]`],
    ]);
    writeFileSync(join(dir, 'secrets/imap-password'), `${dovecot.password}\n`);
    expect(mode(join(dir, 'secrets/imap-password'))).toBe(0o600);
    Store.open(join(dir, 'state/mailbridge.sqlite')).close(); // a store, as serve leaves it

    const r = await doctor();
    expect(r.stderr).toBe('');
    expect(r.status, r.stdout).toBe(0);
    for (const name of ['config file', 'secret server.bearer_file', 'secret mailbox.imap.password_file', 'secret agents[0].webhook.secret_file', 'config', 'store', 'mailbox', 'webhook grok', `dns ${zone.address}`]) {
      expect(line(r.stdout, name).line, name).toMatch(/^ok /);
    }
    expect(line(r.stdout, 'store').line).toMatch(new RegExp(`quick_check ok, schema version ${MIGRATIONS.length}, 0 tasks, 0 open$`));
    expect(line(r.stdout, 'mailbox').line).toMatch(/IMAP login as .* ok, EXAMINE INBOX ok \(UIDVALIDITY \d+\); read-only, nothing fetched$/);
    expect(line(r.stdout, 'webhook grok').line).toMatch(/TCP connected; no HTTP request sent$/);
    expect(receiver.requests).toHaveLength(0);
    expect(zone.queries.some((q) => q.name === '_domainkey.agent.example' && q.type === 'TXT')).toBe(true);

    const bearer = readFileSync(join(dir, 'secrets/bearer'), 'utf8').trim();
    expect(r.stdout).not.toContain(bearer);
    expect(r.stdout).toContain(
      ['a2a_agents:', '  grok:', `    url: http://127.0.0.1:${listenPort}/agents/grok`, `    auth: {type: bearer, token: "<token from ${join(dir, 'secrets/bearer')}>"}`, '    timeout: 120'].join('\n'),
    );
    // The agent's address and DKIM domain are still init's RFC 2606 examples (the test zone serves
    // agent.example), and so is the mailbox address: a warning, not "all checks passed".
    const ex = line(r.stdout, 'example identities');
    expect(ex.line).toMatch(/^warn +example identities +mailbox\.address = me@example\.com, agents\[0\]\.address = agent@agent\.example, agents\[0\]\.dkim_domain = agent\.example are example names \(RFC 2606\)/);
    // the fix names exactly the keys found (not the webhook URL, which is not an example name here)
    expect(ex.next).toBe(`      fix: set mailbox.address, agents[0].address, agents[0].dkim_domain in ${config} to the real values`);
    // init writes no secret file its config does not read, so a fresh folder has no unused one.
    expect(r.stdout).not.toContain('unused secret file');
    expect(r.stdout.trimEnd().endsWith('no check failed, but 1 warning to fix before real use')).toBe(true);
    expect(r.stdout).not.toContain('all checks passed');

    const j = await runCli(['--config', config, 'doctor', '--json']);
    expect(j.status).toBe(0);
    const report = JSON.parse(j.stdout) as DoctorReport;
    expect(report.ok).toBe(true);
    expect(report.checks.filter((c: { status: string }) => c.status !== 'ok').map((c: { name: string; status: string }) => [c.name, c.status])).toEqual([
      ['example identities', 'warn'],
    ]);
    expect(report.hermes!.agents).toEqual([{ name: 'grok', url: `http://127.0.0.1:${listenPort}/agents/grok` }]);
    expect(j.stdout).not.toContain(bearer);
  });

  it('a wrong IMAP password fails the mailbox check with a one-line fix', async () => {
    const pwFile = join(dir, 'secrets/imap-password');
    writeFileSync(pwFile, 'not-the-password\n');
    try {
      const r = await doctor();
      expect(r.status).toBe(1);
      const m = line(r.stdout, 'mailbox');
      expect(m.line).toMatch(new RegExp(`^fail  mailbox +IMAP login failed for ${dovecot.user}$`));
      expect(m.next).toBe('      fix: check mailbox.imap.user and the password in mailbox.imap.password_file (most providers want an app password)');
      expect(r.stdout).not.toContain('not-the-password');
      expect(r.stdout.trimEnd().endsWith('1 check failed; 1 warning to fix before real use')).toBe(true);
    } finally {
      writeFileSync(pwFile, `${dovecot.password}\n`);
    }
  });

  it('a world-readable secret fails its own check with the chmod to run; the rest of the config is still validated', async () => {
    const secret = join(dir, 'secrets/webhook-secret');
    chmodSync(secret, 0o644);
    try {
      const r = await doctor();
      expect(r.status).toBe(1);
      const s = line(r.stdout, 'secret agents[0].webhook.secret_file');
      expect(s.line).toMatch(new RegExp(`^fail .*secret file ${secret} has mode 0644, readable by others$`));
      expect(s.next).toBe(`      fix: chmod 600 ${secret}`);
      expect(line(r.stdout, 'secret server.bearer_file').line).toMatch(/^ok /); // each file separately
      expect(line(r.stdout, 'config').line).toMatch(/^skip .*valid apart from the secret file of agents\[0\]\.webhook\.secret_file$/);
    } finally {
      chmodSync(secret, 0o600);
    }
  });

  it('an unreachable webhook port and a silent DNS server each fail with a fix', async () => {
    const text = readFileSync(config, 'utf8');
    try {
      edit([
        [/^url = ".*"$/m, `url = "http://127.0.0.1:${closedPort}/hook"`],
        [/^servers = \[.*\]$/m, `servers = ["${zone.address}", "127.0.0.1:${closedPort}"]`],
      ]);
      const r = await doctor();
      expect(r.status).toBe(1);
      const w = line(r.stdout, 'webhook grok');
      expect(w.line).toMatch(/^fail .*ECONNREFUSED/);
      expect(w.next).toBe('      fix: check agents[0].webhook.url: nothing accepted the connection (ECONNREFUSED)');
      expect(line(r.stdout, `dns ${zone.address}`).line).toMatch(/^ok /);
      const d = line(r.stdout, `dns 127.0.0.1:${closedPort}`);
      expect(d.line).toMatch(/^fail .*gave no answer for TXT _domainkey\.agent\.example/);
      expect(d.next).toMatch(/^ {6}fix: \[dns\] servers: use a server that answers for agent\.example/);
    } finally {
      writeFileSync(config, text);
    }
  });

  it('after a switch to a Maildir, the IMAP password placeholder left in secrets/ is a warning naming its key', async () => {
    const text = readFileSync(config, 'utf8');
    const pwFile = join(dir, 'secrets/imap-password');
    const password = readFileSync(pwFile, 'utf8');
    const maildir = join(root, 'Maildir');
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(maildir, sub), { recursive: true, mode: 0o700 });
    try {
      edit([
        [/^kind = "imap" .*$/m, 'kind = "maildir"'],
        [/^folder = "INBOX" .*\n.*\n/m, ''],
        [/^\[mailbox\.imap\]\n(?:(?!\[)[^\n]*\n)*/m, `[mailbox.maildir]\npath = "${maildir}"\n\n`],
      ]);
      writeFileSync(pwFile, 'REPLACE-WITH-YOUR-IMAP-APP-PASSWORD\n');
      const r = await doctor();
      expect(r.status, r.stdout).toBe(0);
      const unused = r.stdout.split('\n').filter((l) => l.startsWith('warn  unused secret file'));
      expect(unused).toHaveLength(1);
      expect(unused[0]).toMatch(new RegExp(`${pwFile.replace(/[.]/g, '\\.')} holds a placeholder and no key of the config names it \\(the example config names it in mailbox\\.imap\\.password_file; mailbox\\.kind = "maildir" reads no IMAP password\\)$`));
      expect(r.stdout).toContain(`      fix: delete it (rm ${pwFile}), or write the real secret into it and name it in mailbox.imap.password_file`);
    } finally {
      writeFileSync(config, text);
      writeFileSync(pwFile, password);
    }
  });

  it('a config error is reported with the key and the fix', async () => {
    const text = readFileSync(config, 'utf8');
    try {
      edit([[/^listen = "127\.0\.0\.1:\d+"$/m, `listen = "0.0.0.0:${listenPort}"`]]);
      const r = await doctor();
      expect(r.status).toBe(1);
      const c = line(r.stdout, 'config');
      expect(c.line).toMatch(/^fail .*config key server\.listen: "0\.0\.0\.0" is not a loopback address$/);
      expect(c.next).toBe(`      fix: a2a-mailbridge listens on loopback only (127.0.0.0/8, ::1 or localhost). Use "127.0.0.1:${listenPort}"`);
      expect(r.stdout).not.toContain('a2a_agents:');
    } finally {
      writeFileSync(config, text);
    }
  });

  it('a config error quoting a line with a terminal escape sequence shows it escaped', async () => {
    const file = join(root, 'escape.toml');
    writeFileSync(file, '\x1b]0;PWNED\x07\x1b[2J\n', { mode: 0o600 });
    const r = await runCli(['--config', file, 'config']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^a2a-mailbridge: config file: .*escape\.toml is not valid TOML/);
    expect(r.stderr).toContain('\\u{1b}]0;PWNED\\u{7}\\u{1b}[2J');
    expect([...r.stderr].filter((c) => c !== '\n' && (c < ' ' || c === '\x7f'))).toEqual([]);
  });

  it('a missing config file says to run the init that writes it, with its --config (fresh-user trial: plain init writes ~/.config)', async () => {
    const nope = join(root, 'nope.toml');
    const r = await runCli(['--config', nope, 'doctor']);
    expect(r.status).toBe(1);
    expect(r.stdout).toContain(`fail  config file  cannot read ${nope}: ENOENT\n      fix: create it with: a2a-mailbridge --config ${nope} init, or point --config at the config file you have\n`);
    // Every other command says the same (the loader's words), and that init writes exactly that file.
    const tasks = await runCli(['--config', nope, 'tasks']);
    expect([tasks.status, tasks.stderr]).toEqual([2, `a2a-mailbridge: config file: cannot read ${nope}: ENOENT; create it with: a2a-mailbridge --config ${nope} init, or point --config at the config file you have\n`]);
    const init = await runCli(['--config', nope, 'init']);
    expect(init.status, init.stderr).toBe(0);
    expect(existsSync(nope)).toBe(true);
    expect(init.stdout).toContain(`then run: a2a-mailbridge --config ${nope} doctor`);
    // A path with a space: every path init prints can be pasted as it is (fresh-user trial 2).
    const spaced = join(root, 'my configs', 'config.toml');
    const quoted = await runCli(['--config', spaced, 'init']);
    expect(quoted.status, quoted.stderr).toBe(0);
    expect(quoted.stdout).toContain(`wrote '${spaced}'`);
    expect(quoted.stdout).toContain(`next: edit '${spaced}', fill in the placeholders, then run: a2a-mailbridge --config '${spaced}' doctor`);
    // Where no folder can be made (a file stands in the way): init --dir of one's own.
    const blocked = join(root, 'nope.toml', 'config.toml');
    const b = await runCli(['--config', blocked, 'doctor']);
    expect(b.stdout).toContain(`      fix: ${nope} cannot be written: create a config with: a2a-mailbridge init --dir <a folder of yours>, then pass --config <that folder>/config.toml; or point --config at the config file you have\n`);
  });
});

const haveOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!haveOpenssl)('doctor: https webhook reachability is a TLS handshake, never an HTTP request', () => {
  let server: TlsServer;
  let certFile: string;
  const seen = { connections: 0, bytes: 0 };
  /** Resolves when the server side of the next TLS connection has closed (all its bytes counted). */
  let closed: Promise<void> = Promise.resolve();
  let onClosed = (): void => {};
  const expectClose = (): void => {
    closed = new Promise((r) => (onClosed = r));
  };

  beforeAll(async () => {
    if (!existsSync(config)) throw new Error('runs after the init → doctor tests');
    const keyFile = join(root, 'key.pem');
    certFile = join(root, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    server = createTlsServer({ key: readFileSync(keyFile), cert: readFileSync(certFile) }, (socket) => {
      // 'secureConnection': the handshake finished on the server side too.
      seen.connections += 1;
      socket.on('data', (d: Buffer) => (seen.bytes += d.length));
      socket.on('error', () => {});
      socket.on('close', () => onClosed());
    });
    server.on('tlsClientError', () => {});
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    edit([[/^url = ".*"$/m, `url = "https://127.0.0.1:${(server.address() as AddressInfo).port}/hook/secret-path"`]]);
  });
  afterAll(async () => {
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  });

  it('a certificate the system trusts: handshake ok, no byte of HTTP sent, the URL path not printed', async () => {
    expectClose();
    const r = await doctor({ NODE_EXTRA_CA_CERTS: certFile });
    const w = line(r.stdout, 'webhook grok');
    expect(w.line).toMatch(/^ok .*TLSv1\.3 handshake ok, certificate valid until .*; no HTTP request sent$/);
    expect(r.stdout).not.toContain('secret-path');
    await closed;
    expect(seen.connections).toBe(1);
    expect(seen.bytes).toBe(0);
  });

  it('an untrusted certificate fails with the reason and a fix', async () => {
    const r = await doctor();
    expect(r.status).toBe(1);
    const w = line(r.stdout, 'webhook grok');
    expect(w.line).toMatch(/^fail .*self-signed certificate/i);
    expect(w.next).toBe('      fix: the certificate does not verify (DEPTH_ZERO_SELF_SIGNED_CERT); webhook deliveries would fail the same way: check agents[0].webhook.url');
  });
});
