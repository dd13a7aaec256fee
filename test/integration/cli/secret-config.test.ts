import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from 'smol-toml';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { runCli } from '../../helpers/cli.js';
import { makeConfigDir, minimalToml, TEST_BEARER, TEST_WEBHOOK_BEARER, TEST_WEBHOOK_SECRET } from '../../helpers/config-dir.js';

/**
 * The two config commands, as child processes: `secret new` (re)generates one secret
 * file, `config` prints the config in effect with secrets as paths only.
 */
const c = makeConfigDir(minimalToml());
const cli = (...args: string[]) => runCli(['--config', c.configPath, ...args]);
const mode = (p: string): number => statSync(p).mode & 0o777;
afterAll(() => rmSync(c.dir, { recursive: true, force: true }));

describe('secret new', () => {
  it('a missing bearer: doctor and serve name `secret new`, which writes it (64 hex, 0600), never printing it', async () => {
    const bearer = join(c.dir, 'bearer');
    rmSync(bearer);
    const d = await cli('doctor');
    expect(d.stdout).toContain(`fail  secret server.bearer_file`);
    expect(d.stdout).toContain(`      fix: create it with: a2a-mailbridge --config ${c.configPath} secret new server.bearer_file\n`);
    // serve, with --config as a relative path (`--config cfg2/config.toml`): the command it names repeats it, absolute.
    const s = await runCli(['--config', relative(process.cwd(), c.configPath), 'serve']);
    expect(s.status).toBe(2);
    expect(s.stderr).toContain(`does not exist; create it with: a2a-mailbridge --config ${c.configPath} secret new server.bearer_file\n`);
    expect(s.stderr).not.toContain('init');
    // The commands that need no secret work meanwhile: the config in effect, the status.
    const shown = await cli('config');
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`bearer_file = "${bearer}"`);
    const st = await cli('status');
    expect(st.status, st.stderr).toBe(3); // listen port 0, and no serve holds the store's claim: not running
    expect(st.stdout).toContain('does not exist yet; serve creates it on its first start');

    const r = await cli('secret', 'new', 'server.bearer_file');
    expect(r.status, r.stderr).toBe(0);
    const value = readFileSync(bearer, 'utf8');
    expect(value).toMatch(/^[0-9a-f]{64}\n$/);
    expect(mode(bearer)).toBe(0o600);
    expect(r.stdout).toBe(
      `wrote ${bearer} (server.bearer_file, mode 0600): the facade's bearer (32 random bytes, hex), not shown here\n` +
        `next: put its content into each caller's config (Hermes: a2a_agents.<name>.auth.token), then restart the bridge if it runs (it reads its secrets at start): a2a-mailbridge --config ${c.configPath} stop, then a2a-mailbridge --config ${c.configPath} serve\n`,
    );
    expect(r.stdout).not.toContain(value.trim());
    expect(loadConfig(c.configPath).server.bearer).toBe(value.trim());
  });

  it('never overwrites without --force; with it the file is replaced atomically and stays 0600', async () => {
    const secret = join(c.dir, 'webhook-secret');
    const before = readFileSync(secret, 'utf8');
    const refused = await cli('secret', 'new', 'webhook-secret');
    expect(refused.status).toBe(1);
    expect(refused.stderr).toBe(`a2a-mailbridge: ${secret} (agents[0].webhook.secret_file) exists; pass --force to replace it (whoever holds the old secret must then get the new one)\n`);
    expect(readFileSync(secret, 'utf8')).toBe(before);

    const r = await cli('secret', 'new', 'webhook-secret', '--agent', 'grok', '--force');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^replaced .*webhook-secret \(agents\[0\]\.webhook\.secret_file, mode 0600\): a Standard Webhooks signing secret/);
    expect(r.stdout).toContain("at the webhook of agent grok");
    const after = readFileSync(secret, 'utf8');
    expect(after).toMatch(/^whsec_[A-Za-z0-9+/]{43}=\n$/);
    expect(after).not.toBe(before);
    expect(mode(secret)).toBe(0o600);
    // The loader takes it (it signs with it once), and no temporary file is left beside it.
    expect(loadConfig(c.configPath).agents[0]!.webhook.signingSecret).toBe(after.trim());
    expect(existsSync(secret)).toBe(true);
    expect(readdirSync(c.dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('refuses what it cannot generate, and names the valid choices for an unknown name', async () => {
    const issued = await cli('secret', 'new', 'webhook-bearer');
    expect(issued.status).toBe(1);
    expect(issued.stderr).toMatch(/agents\[0\]\.webhook\.bearer_file holds the token the agent's webhook expects, which is issued elsewhere, not generated here; write it with mode 0600: umask 077 && printf/);
    const unknown = await cli('secret', 'new', 'password');
    expect(unknown.status).toBe(2);
    // Only the names this config has (a Maildir config reads no IMAP password), and only those
    // `secret new` generates as its choices: the trigger token, issued elsewhere, apart.
    expect(unknown.stderr).toBe(
      'a2a-mailbridge: secret new "password": not a secret of this config; `secret new` generates: bearer, webhook-secret, server.bearer_file, agents[0].webhook.secret_file; ' +
        `set by you, not generated: agents[0].webhook.bearer_file (the token the agent's webhook expects: write it into ${join(c.dir, 'webhook-bearer')}, mode 0600)\n`,
    );
    const noAgent = await cli('secret', 'new', 'webhook-secret', '--agent', 'nobody');
    expect(noAgent.status).toBe(2);
    expect(noAgent.stderr).toBe(`a2a-mailbridge: no agent nobody in the config, which has grok; see a2a-mailbridge --config ${c.configPath} config\n`);
  });

  it('a name this config has no file for: the names it has, never the refused one, and how to add the key', async () => {
    const sw = makeConfigDir(minimalToml().replace('auth = "both"\nbearer_file = "webhook-bearer"\n', 'auth = "standard-webhooks"\n'));
    const r = await runCli(['--config', sw.configPath, 'secret', 'new', 'webhook-bearer']);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      'a2a-mailbridge: this config reads no webhook-bearer file; `secret new` generates: bearer, webhook-secret, server.bearer_file, agents[0].webhook.secret_file; ' +
        'to add one, in the agent\'s [agents.webhook], set auth = "bearer" (or "both") and bearer_file = "secrets/webhook-bearer"\n',
    );
    rmSync(sw.dir, { recursive: true, force: true });
  });

  it("an IMAP config's unknown name: the IMAP password is offered as the user's to write, never as a name to generate", async () => {
    const imap = makeConfigDir(
      minimalToml().replace('kind = "maildir"', 'kind = "imap"').replace('[mailbox.maildir]\npath = "Maildir"', '[mailbox.imap]\nhost = "127.0.0.1"\nuser = "u"\npassword_file = "imap-password"'),
    );
    const r = await runCli(['--config', imap.configPath, 'secret', 'new', 'foo']);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      'a2a-mailbridge: secret new "foo": not a secret of this config; `secret new` generates: bearer, webhook-secret, server.bearer_file, agents[0].webhook.secret_file; ' +
        `set by you, not generated: mailbox.imap.password_file (your IMAP app password: write it into ${join(imap.dir, 'imap-password')}, mode 0600), ` +
        `agents[0].webhook.bearer_file (the token the agent's webhook expects: write it into ${join(imap.dir, 'webhook-bearer')}, mode 0600)\n`,
    );
    // The name it would have offered before is refused, as it should be.
    const refused = await runCli(['--config', imap.configPath, 'secret', 'new', 'imap-password']);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/mailbox\.imap\.password_file holds your IMAP app password, which is issued elsewhere, not generated here/);
    rmSync(imap.dir, { recursive: true, force: true });
  });
});

describe('config', () => {
  it('prints the config in effect as TOML, defaults filled in, secrets as paths only', async () => {
    const r = await cli('config');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^# The config in effect, from .*mailbridge\.toml: every key with its value or default\.\n/);
    const doc = parse(r.stdout) as { server: unknown; mailbox: unknown; agents: { webhook: unknown }[] };
    expect(doc.server).toMatchObject({ listen: '127.0.0.1:0', bearer_file: join(c.dir, 'bearer'), caller_timeout_s: 30, wait_budget_s: 0 });
    expect(doc.mailbox).toMatchObject({ kind: 'maildir', check_interval_s: 15, watch: false, maildir: { path: join(c.dir, 'Maildir') } });
    expect(doc.agents[0]!.webhook).toMatchObject({ auth: 'both', max_attempts: 8, secret_file: join(c.dir, 'webhook-secret'), bearer_file: join(c.dir, 'webhook-bearer') });
    for (const secret of [TEST_BEARER, TEST_WEBHOOK_BEARER, TEST_WEBHOOK_SECRET, readFileSync(join(c.dir, 'bearer'), 'utf8').trim(), 'pass']) {
      expect(r.stdout).not.toContain(`"${secret}"`);
    }
    const j = await cli('config', '--json');
    expect(JSON.parse(j.stdout)).toEqual(doc);
  });

  it('a config that does not load is the same error as for serve', async () => {
    const bad = makeConfigDir(minimalToml().replace('[mailbox]', '[mailbox]\nchek_interval_s = 3'));
    const r = await runCli(['--config', bad.configPath, 'config']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^a2a-mailbridge: config key mailbox\.chek_interval_s: is not a known key; did you mean mailbox\.check_interval_s\?/);
    rmSync(bad.dir, { recursive: true, force: true });
  });
});
