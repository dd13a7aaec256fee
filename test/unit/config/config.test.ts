import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'smol-toml';
import { ConfigError, ConfigErrors, effectiveConfig, loadConfig, parseConfig, type Config } from '../../../src/config/config.js';
import { doctor } from '../../../src/cli/doctor.js';
import { makeConfigDir, minimalToml, TEST_BEARER, TEST_WEBHOOK_SECRET, writeSecret } from '../../helpers/config-dir.js';

describe('loadConfig', () => {
  it('reads a minimal config with defaults and resolves paths against the config folder', () => {
    const c = makeConfigDir(minimalToml({ listen: '127.0.0.1:8765' }));
    const cfg = loadConfig(c.configPath);
    expect(cfg.server).toMatchObject({ host: '127.0.0.1', port: 8765, bearer: TEST_BEARER, maxBodyBytes: 1048576 });
    expect(cfg.store.path).toBe(join(c.dir, 'state/bridge.sqlite'));
    expect(cfg.mailbox.maildirPath).toBe(join(c.dir, 'Maildir'));
    const [agent] = cfg.agents;
    expect(agent).toMatchObject({ name: 'grok', tag: 'GROK', address: 'agent@agent.example', dkimDomain: 'agent.example' });
    expect(agent!.webhook.signingSecret).toBe(TEST_WEBHOOK_SECRET);
    expect(agent!.untrustedLabel).toBe('[UNTRUSTED — grok reply, verify before acting]');
    // Fastmail's per-host authserv-ids match, anchored: a suffix trick does not.
    expect(cfg.mailbox.authservId.test('phl-mx-04.messagingengine.com')).toBe(true);
    expect(cfg.mailbox.authservId.test('evilmessagingengine.com')).toBe(false);
    expect(cfg.mailbox.authservId.test('mx1.messagingengine.com.evil.test')).toBe(false);
  });

  it.each([
    ['0.0.0.0:8765', /not a loopback address.*Use "127\.0\.0\.1:8765"/],
    ['192.168.1.5:80', /not a loopback address/],
    ['[::]:8765', /not a loopback address/],
    ['127.0.0.1', /must be "<loopback ip>:<port>"/],
  ])('refuses listen = %s and says what to change', (listen, msg) => {
    const c = makeConfigDir(minimalToml({ listen }));
    expect(() => loadConfig(c.configPath)).toThrow(ConfigError);
    expect(() => loadConfig(c.configPath)).toThrow(msg);
    expect(() => loadConfig(c.configPath)).toThrow(/^config key server\.listen: /);
  });

  it('accepts IPv6 loopback', () => {
    const c = makeConfigDir(minimalToml({ listen: '[::1]:9000' }));
    expect(loadConfig(c.configPath).server).toMatchObject({ host: '::1', port: 9000 });
  });

  it('accepts localhost and binds 127.0.0.1 literally', () => {
    for (const listen of ['localhost:8765', 'LocalHost:8765']) {
      const c = makeConfigDir(minimalToml({ listen }));
      const cfg = loadConfig(c.configPath);
      expect(cfg.server).toMatchObject({ host: '127.0.0.1', port: 8765 });
      expect(effectiveConfig(cfg)!.server).toMatchObject({ listen: '127.0.0.1:8765' });
    }
    const lan = makeConfigDir(minimalToml({ listen: 'my-laptop.local:8765' }));
    expect(() => loadConfig(lan.configPath)).toThrow('config key server.listen: "my-laptop.local" is not a loopback address; a2a-mailbridge listens on loopback only (127.0.0.0/8, ::1 or localhost). Use "127.0.0.1:8765"');
  });

  it('refuses a path that starts with ~ (not expanded), naming the key and the full path to write', () => {
    const maildir = makeConfigDir(minimalToml().replace('path = "Maildir"', 'path = "~/Mail/agents"'));
    expect(() => loadConfig(maildir.configPath)).toThrow(`config key mailbox.maildir.path: "~/Mail/agents" starts with "~", which is not expanded (a relative path is taken from the config file's folder); write the full path: ${JSON.stringify(join(homedir(), 'Mail/agents'))}`);
    const store = makeConfigDir(minimalToml().replace('path = "state/bridge.sqlite"', 'path = "~"'));
    expect(() => loadConfig(store.configPath)).toThrow(/^config key store\.path: "~" starts with "~"/);
    // A name that merely begins with ~ in the config folder is a relative path like any other.
    const tilde = makeConfigDir(minimalToml().replace('path = "Maildir"', 'path = "~Maildir"'));
    expect(loadConfig(tilde.configPath).mailbox.maildirPath).toBe(join(tilde.dir, '~Maildir'));
  });

  it('refuses a world-readable secret naming the key, the file and the fix', () => {
    const c = makeConfigDir(minimalToml());
    chmodSync(join(c.dir, 'bearer'), 0o644);
    expect(() => loadConfig(c.configPath)).toThrow(`config key server.bearer_file: secret file ${join(c.dir, 'bearer')} has mode 0644, readable by others; run: chmod 600 ${join(c.dir, 'bearer')}`);
  });

  it('refuses a config file, or its folder, that others can write, naming the path and the chmod', () => {
    const c = makeConfigDir(minimalToml());
    chmodSync(c.configPath, 0o664);
    expect(() => loadConfig(c.configPath)).toThrow(`config file: ${c.configPath} is writable by others (mode 0664), so they could redirect the bridge; run: chmod go-w ${c.configPath}`);
    chmodSync(c.configPath, 0o644);
    chmodSync(c.dir, 0o777);
    expect(() => loadConfig(c.configPath)).toThrow(`config file: ${c.dir} is writable by others (mode 0777), so they could redirect the bridge; run: chmod go-w ${c.dir}`);
    chmodSync(c.dir, 0o755);
    expect(loadConfig(c.configPath).agents).toHaveLength(1);
  });

  it('refuses a config path that is not a regular file, or over 1 MiB, at once and naming the fix', () => {
    // A FIFO blocked the read until a writer came (doctor, serve hung with no output); /dev/zero
    // through a symlink was read until memory ran out (22 GB resident after 60 s).
    const c = makeConfigDir(minimalToml());
    const fifo = join(c.dir, 'fifo.toml');
    execFileSync("mkfifo", [fifo]);
    expect(() => loadConfig(fifo)).toThrow(`config file: ${fifo} is not a regular file (a FIFO); point --config (or A2A_MAILBRIDGE_CONFIG) at the config file itself`);
    const zero = join(c.dir, 'zero.toml');
    symlinkSync('/dev/zero', zero);
    expect(() => loadConfig(zero)).toThrow(`config file: ${zero} is not a regular file (a character device); point --config (or A2A_MAILBRIDGE_CONFIG) at the config file itself`);
    expect(() => loadConfig(c.dir)).toThrow(`config file: ${c.dir} is not a regular file (a directory)`);
    const big = join(c.dir, 'big.toml');
    writeFileSync(big, `${minimalToml()}\n${'#'.repeat(1024 * 1024)}\n`, { mode: 0o600 });
    expect(() => loadConfig(big)).toThrow(`config file: ${big} is larger than 1 MiB (1,048,`);
    // A symlink to a real config is still read (a config kept with one's dotfiles).
    const link = join(c.dir, 'link.toml');
    symlinkSync(c.configPath, link);
    expect(loadConfig(link).agents).toHaveLength(1);
    rmSync(c.dir, { recursive: true, force: true });
  });

  it('refuses a secrets folder others can write, like a secret others can read', () => {
    const c = makeConfigDir(minimalToml().replace('bearer_file = "bearer"', 'bearer_file = "secrets/bearer"'));
    mkdirSync(join(c.dir, 'secrets'), { mode: 0o700 });
    writeSecret(join(c.dir, 'secrets'), 'bearer', TEST_BEARER);
    expect(loadConfig(c.configPath).server.bearer).toBe(TEST_BEARER);
    chmodSync(join(c.dir, 'secrets'), 0o770);
    expect(() => loadConfig(c.configPath)).toThrow(`config key server.bearer_file: secret file ${join(c.dir, 'secrets', 'bearer')} is in ${join(c.dir, 'secrets')}, which others can write (mode 0770), so they could replace the secret; run: chmod go-w ${join(c.dir, 'secrets')}`);
  });

  it('reads the per-agent caps with their defaults and bounds', () => {
    const c = makeConfigDir(minimalToml());
    const [agent] = loadConfig(c.configPath).agents;
    expect(agent!.maxOpenTasks).toBe(20);
    expect(agent!.webhook.maxPerMinute).toBe(10);
    const set = makeConfigDir(minimalToml().replace('name = "grok"', 'name = "grok"\nmax_open_tasks = 5').replace('auth = "both"', 'auth = "both"\nmax_per_minute = 3'));
    expect(loadConfig(set.configPath).agents[0]).toMatchObject({ maxOpenTasks: 5, webhook: { maxPerMinute: 3 } });
    const zero = makeConfigDir(minimalToml().replace('auth = "both"', 'auth = "both"\nmax_per_minute = 0'));
    expect(() => loadConfig(zero.configPath)).toThrow(/config key agents\[0\]\.webhook\.max_per_minute: must be an integer from 1 to 10000/);
  });

  it('names unknown keys, wrong types and bad values', () => {
    const typo = makeConfigDir(minimalToml().replace('[mailbox]', '[mailbox]\ncheck_intervall_s = 3'));
    expect(() => loadConfig(typo.configPath)).toThrow('config key mailbox.check_intervall_s: is not a known key; did you mean mailbox.check_interval_s? (known in [mailbox]: ');
    // A key refused by name (provider_host, retired) is never offered among the known ones.
    expect(() => loadConfig(typo.configPath)).toThrow(/^(?![\s\S]*provider_host)/);
    const type = makeConfigDir(minimalToml().replace('[mailbox]', '[mailbox]\ncheck_interval_s = "3"'));
    expect(() => loadConfig(type.configPath)).toThrow(/config key mailbox\.check_interval_s: must be an integer/);
    const url = makeConfigDir(minimalToml({ webhookUrl: 'http://agent.example/hook' }));
    expect(() => loadConfig(url.configPath)).toThrow(/config key agents\[0\]\.webhook\.url: plain http is allowed only to a loopback/);
    const syntax = makeConfigDir('[server\n');
    expect(() => loadConfig(syntax.configPath)).toThrow(/not valid TOML/);
  });

  it('requires the secret the chosen webhook auth needs', () => {
    const c = makeConfigDir(minimalToml().replace('bearer_file = "webhook-bearer"\n', ''));
    expect(() => loadConfig(c.configPath)).toThrow('config key agents[0].webhook.bearer_file: is required when auth = "both"');
  });

  it('refuses two agents with the same name or tag', () => {
    const second = `
[[agents]]
name = "other"
tag = "grok"
address = "b@agent.example"
[agents.webhook]
url = "http://127.0.0.1:9/b"
auth = "bearer"
bearer_file = "webhook-bearer"
`;
    const c = makeConfigDir(minimalToml({ extraAgent: second }));
    expect(() => loadConfig(c.configPath)).toThrow(/config key agents\[1\]\.tag: "grok" is already used by agents\[0\]/);
  });

  it('reports a duplicate name in the same run as the other errors of that agent (README: every bad value in one run)', () => {
    const second = `
[[agents]]
name = "grok"
address = "b@agent.example"
deadline_s = "soon"
[agents.webhook]
url = "http://127.0.0.1:9/b"
auth = "bearer"
bearer_file = "webhook-bearer"
`;
    const c = makeConfigDir(minimalToml({ extraAgent: second }));
    expect(() => loadConfig(c.configPath)).toThrow(/agents\[1\]\.deadline_s: must be[^]*agents\[1\]\.name: "grok" is already used by agents\[0\][^]*agents\[1\]\.tag: "grok" is already used/);
  });
});

describe('provider patterns', () => {
  it('anchor the whole pattern, alternations included', () => {
    const patterns = `[mailbox]\nauthserv_id = 'mx1\\.a\\.test|mx2\\.a\\.test'\nborder_host = '^mx\\d\\.a\\.test$'`;
    const c = makeConfigDir(minimalToml().replace('[mailbox]', () => patterns));
    const cfg = loadConfig(c.configPath);
    expect(cfg.mailbox.authservId.test('mx2.a.test')).toBe(true);
    expect(cfg.mailbox.authservId.test('mx1.a.test.evil.test')).toBe(false);
    expect(cfg.mailbox.authservId.test('evil.mx2.a.test')).toBe(false);
    expect(cfg.mailbox.borderHost.test('mx7.a.test')).toBe(true);
    expect(cfg.mailbox.borderHost.test('xmx7.a.test')).toBe(false);
  });
});

describe('answer time budget', () => {
  it('refuses a blocking wait that would not answer inside the caller timeout, naming the parts', () => {
    const c = makeConfigDir(minimalToml().replace('[store]', '[store]').replace('bearer_file = "bearer"', 'bearer_file = "bearer"\ncaller_timeout_s = 30\nwait_budget_s = 20'));
    expect(() => loadConfig(c.configPath)).toThrow(
      "config key server.wait_budget_s: the slowest answer (webhook timeout 10 s + wait_budget_s 20 s + mailbox.check_wait_ms 5000 ms) is not below server.caller_timeout_s (30 s); raise caller_timeout_s (to what the caller waits), or lower wait_budget_s, the agents' webhook timeout_s or check_wait_ms",
    );
    // With no blocking wait, the caller's timeout is the key to look at (a fresh-user trial set it to 5 s).
    const short = makeConfigDir(minimalToml().replace('bearer_file = "bearer"', 'bearer_file = "bearer"\ncaller_timeout_s = 5'));
    expect(() => loadConfig(short.configPath)).toThrow(/^config key server\.caller_timeout_s: the slowest answer \(webhook timeout 10 s \+ wait_budget_s 0 s .*raise caller_timeout_s/);
    const ok = makeConfigDir(minimalToml().replace('bearer_file = "bearer"', 'bearer_file = "bearer"\ncaller_timeout_s = 120\nwait_budget_s = 20'));
    expect(loadConfig(ok.configPath).server).toMatchObject({ callerTimeoutMs: 120_000, waitBudgetMs: 20_000 });
  });
});

describe('secrets and values that would fail later', () => {
  const withSecret = (name: string, value: string) => {
    const c = makeConfigDir(minimalToml());
    writeSecret(c.dir, name, value);
    return c.configPath;
  };
  it('refuses a bearer with whitespace, naming the likely cause', () => {
    expect(() => loadConfig(withSecret('bearer', 'a-long-enough-token\n'))).toThrow(/config key server\.bearer_file: .* contains whitespace \(a second trailing newline\?\)/);
    expect(() => loadConfig(withSecret('webhook-bearer', 'two words-long-enough'))).toThrow(/agents\[0\]\.webhook\.bearer_file: .* contains whitespace/);
  });
  it('refuses a malformed whsec_ secret at start, not at the first dispatch', () => {
    expect(() => loadConfig(withSecret('webhook-secret', 'whsec_AAAAAAAAAAAAAAAA===AAAA'))).toThrow(/agents\[0\]\.webhook\.secret_file: must hold a Standard Webhooks secret/);
    expect(() => loadConfig(withSecret('webhook-secret', 'whsec_c2hvcnQ='))).toThrow(/at least 16 random bytes/);
  });
  it('refuses the placeholders shipped in secrets.example', () => {
    expect(() => loadConfig(withSecret('bearer', 'replace-with-a-long-random-token'))).toThrow(/still holds the placeholder from secrets.example/);
  });
  it('refuses a DNS server that is not an IP with an optional port', () => {
    const c = makeConfigDir(`${minimalToml()}\n[dns]\nservers = ["127.0.0.1:5353", "[::1]:53", "not-an-ip"]\n`);
    expect(() => loadConfig(c.configPath)).toThrow('config key dns.servers[2]: must be an IP address with an optional port');
  });
  it('says a mailbox table belongs to the other kind instead of calling it a typo', () => {
    const c = makeConfigDir(minimalToml().replace('[mailbox.maildir]', '[mailbox.imap]\nhost = "x"\n[mailbox.maildir]'));
    expect(() => loadConfig(c.configPath)).toThrow('config key mailbox.imap: applies only when mailbox.kind = "imap" (it is "maildir"); remove the [mailbox.imap] table or change kind');
  });
  it('refuses mailbox.folder with a Maildir (IMAP only: it would do nothing), naming the key and the fix', () => {
    const c = makeConfigDir(minimalToml().replace('kind = "maildir"\n', 'kind = "maildir"\nfolder = "Agents"\n'));
    expect(() => loadConfig(c.configPath)).toThrow(
      'config key mailbox.folder: applies only when mailbox.kind = "imap" (it is "maildir"); a Maildir\'s folder is mailbox.maildir.path: remove folder or change kind',
    );
    // and `config` does not print a folder for a Maildir, so what it prints loads again
    expect(effectiveConfig(loadConfig(makeConfigDir(minimalToml()).configPath))!.mailbox).not.toHaveProperty('folder');
  });
  it('an IMAP config switched to a Maildir half-way: every key that does not apply or is unknown in one run, each with its fix', async () => {
    const toml = minimalToml()
      .replace('kind = "maildir"\n', 'kind = "maildir"\nfolder = "INBOX"\nchek_interval_s = 30\n')
      .replace('[mailbox.maildir]\npath = "Maildir"', '[mailbox.imap]\nhost = "imap.example.com"\nuser = "me"\n[mailbox.maildir]\npath = "Maildir"\nfolder = "x"');
    const c = makeConfigDir(toml);
    let err: unknown;
    try {
      loadConfig(c.configPath);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigErrors);
    expect((err as ConfigErrors).errors.map((e) => e.key)).toEqual(['mailbox.imap', 'mailbox.folder', 'mailbox.maildir.folder', 'mailbox.chek_interval_s']);
    expect((err as Error).message.split('\n')).toEqual([
      'config key mailbox.imap: applies only when mailbox.kind = "imap" (it is "maildir"); remove the [mailbox.imap] table or change kind',
      'config key mailbox.folder: applies only when mailbox.kind = "imap" (it is "maildir"); a Maildir\'s folder is mailbox.maildir.path: remove folder or change kind',
      'config key mailbox.maildir.folder: is not a known key; the keys known in [mailbox.maildir] are: path',
      expect.stringMatching(/^config key mailbox\.chek_interval_s: is not a known key; did you mean mailbox\.check_interval_s\? /),
    ]);
    // doctor: one failed config check per key, each with its fix.
    const report = await doctor(c.configPath);
    expect(report.checks.filter((x) => x.name === 'config').map((x) => [x.status, x.detail.split(':')[0]])).toEqual([
      ['fail', 'config key mailbox.imap'],
      ['fail', 'config key mailbox.folder'],
      ['fail', 'config key mailbox.maildir.folder'],
      ['fail', 'config key mailbox.chek_interval_s'],
    ]);
    // A value error that stops the reading comes with the key problems found before it.
    const bad = makeConfigDir(toml.replace('[store]', '[store]\nsize = 1').replace('[[agents]]', '[log]\nlevel = "loud"\n\n[[agents]]'));
    expect(() => loadConfig(bad.configPath)).toThrow(/^config key store\.size: is not a known key[^\n]*\n(?:config key mailbox\.[^\n]*\n){4}config key log\.level: must be one of/);
  });
});

describe('second hostile trial', () => {
  it('refuses a bearer outside visible ASCII (clients encode it differently)', () => {
    const c = makeConfigDir(minimalToml());
    writeSecret(c.dir, 'bearer', 'bearer-with-é-long-enough');
    expect(() => loadConfig(c.configPath)).toThrow(/server\.bearer_file: .* holds characters outside visible ASCII/);
  });
  it('refuses a provider pattern that would trust anyone', () => {
    for (const [key, value] of [['authserv_id', '.+\\.example'], ['border_host', 'mx\\..*']]) {
      const c = makeConfigDir(minimalToml().replace('[mailbox]', () => `[mailbox]\n${key} = '${value}'`));
      expect(() => loadConfig(c.configPath), `${key} = ${value}`).toThrow(/matches hosts that are not your provider's/);
    }
  });
  it('refuses the older provider_host, naming the two keys that replace it', () => {
    const c = makeConfigDir(minimalToml().replace('[mailbox]', () => "[mailbox]\nprovider_host = 'mx\\.example\\.org'"));
    expect(() => loadConfig(c.configPath)).toThrow(/^config key mailbox\.provider_host: is no longer read; set authserv_id .* and border_host .* instead: the same pattern in both does what provider_host did/);
  });
  it('names the line and column of a TOML syntax error, and shows the line', () => {
    const c = makeConfigDir('[server]\nlisten = "127.0.0.1:1"\nbearer_file = \n');
    expect(() => loadConfig(c.configPath)).toThrow(/^config file: .*mailbridge.toml is not valid TOML at line 3, column \d+: .*; correct line 3, column \d+: bearer_file =$/);
  });
  it('suggests the nearest known key for a typo, or lists the keys of that table', () => {
    const cases: [string, string][] = [
      ['[server]', 'bearer = "bearer"'],
      ['[mailbox]', 'wach = true'],
      ['[agents.webhook]', 'max_atempts = 3'],
    ];
    const wanted = ['did you mean server.bearer_file?', 'did you mean mailbox.watch?', 'did you mean agents[0].webhook.max_attempts?'];
    cases.forEach(([table, line], i) => {
      const c = makeConfigDir(minimalToml().replace(table, () => `${table}\n${line}`));
      expect(() => loadConfig(c.configPath)).toThrow(wanted[i]);
    });
    const far = makeConfigDir(minimalToml().replace('[store]', '[store]\ncolour = "blue"'));
    expect(() => loadConfig(far.configPath)).toThrow('config key store.colour: is not a known key; the keys known in [store] are: path');
    const top = makeConfigDir(`mailboxes = 1\n${minimalToml()}`);
    expect(() => loadConfig(top.configPath)).toThrow(/config key mailboxes: is not a known key; did you mean mailbox\? \(known in the top level: agents, dns, log, mailbox, server, store\)/);
  });

  it('names the likely misspelling when a required key or the table holding it is absent', () => {
    const table = makeConfigDir(minimalToml().replace('[server]', '[sever]'));
    expect(() => loadConfig(table.configPath)).toThrow('config key server.bearer_file: is required (a string); the file has no [server] but has [sever]: a misspelling of it?');
    const key = makeConfigDir(minimalToml().replace(/^bearer_file = /m, 'bearer_fiel = '));
    expect(() => loadConfig(key.configPath)).toThrow('config key server.bearer_file: is required (a string); server.bearer_fiel is in the file: a misspelling of server.bearer_file?');
    const none = makeConfigDir(minimalToml().replace('[server]', '[zzz]'));
    // The missing key ends [server] only: the unknown table is reported in the same run.
    expect(() => loadConfig(none.configPath)).toThrow(/^config key server\.bearer_file: is required \(a string\)\nconfig key zzz: is not a known key; the keys known in the top level are: agents, dns, log, mailbox, server, store$/);
  });
});

describe('the config in effect (a2a-mailbridge config)', () => {
  it('loads without reading a secret file when told to: paths known, values empty', () => {
    const c = makeConfigDir(minimalToml());
    for (const f of ['bearer', 'webhook-secret', 'webhook-bearer']) chmodSync(join(c.dir, f), 0o644); // unsafe: a full load refuses
    expect(() => loadConfig(c.configPath)).toThrow(/has mode 0644/);
    const config = loadConfig(c.configPath, { skipSecrets: true });
    expect(config.server.bearer).toBe('');
    expect(config.agents[0]!.webhook).toMatchObject({ signingSecret: '', bearer: '' });
    expect(effectiveConfig(config)!.server).toMatchObject({ bearer_file: join(c.dir, 'bearer') });
  });

  /** A Config as plain data: patterns by source, URLs by href. */
  const plain = (c: Config): unknown => JSON.parse(JSON.stringify(c, (_k, v: unknown) => (v instanceof RegExp ? `/${v.source}/${v.flags}` : v instanceof URL ? v.href : v)));

  it('holds every key with its default, and parsed again gives the same config', () => {
    const extra = `
[log]
level = "debug"
[dns]
servers = ["127.0.0.1:5353"]
`;
    const c = makeConfigDir(minimalToml({ listen: 'localhost:8765' }) + extra);
    const config = loadConfig(c.configPath);
    const effective = effectiveConfig(config)!;
    expect(effective).toMatchObject({
      server: { listen: '127.0.0.1:8765', bearer_file: join(c.dir, 'bearer'), name: 'a2a-mailbridge', caller_timeout_s: 30 },
      store: { path: join(c.dir, 'state/bridge.sqlite') },
      mailbox: { kind: 'maildir', check_interval_s: 15, check_wait_ms: 5000, watch: false, provider: 'fastmail', maildir: { path: join(c.dir, 'Maildir') } },
      log: { level: 'debug', max_size_mb: 10 },
      dns: { servers: ['127.0.0.1:5353'] },
      agents: [{ name: 'grok', tag: 'GROK', deadline_s: 3600, webhook: { auth: 'both', timeout_s: 10, secret_file: join(c.dir, 'webhook-secret') } }],
    });
    expect(JSON.stringify(effective)).not.toContain(TEST_BEARER);
    expect(JSON.stringify(effective)).not.toContain(TEST_WEBHOOK_SECRET);
    // Every default written out and read back, from another folder: the same config.
    const again = parseConfig(parse(stringify(effective)), '/elsewhere', config.file);
    expect(plain(again)).toEqual(plain(config));
  });
});

describe('mailbox.provider and OAuth2 sign-in', () => {
  const withMailbox = (lines: string): string => minimalToml().replace('kind = "maildir"\n', `kind = "maildir"\n${lines}\n`);

  it('builds each preset, fastmail by default, and lets explicit patterns override it', () => {
    expect(loadConfig(makeConfigDir(minimalToml()).configPath).mailbox.provider).toBe('fastmail');
    const ms = loadConfig(makeConfigDir(withMailbox('provider = "outlook"')).configPath).mailbox.profile;
    expect(ms).toMatchObject({ name: 'outlook', idless: true });
    const own = loadConfig(makeConfigDir(withMailbox("provider = \"gmail\"\nauthserv_id = 'mx\\.example\\.org'")).configPath).mailbox.profile;
    expect(own.authservId.test('mx.example.org')).toBe(true);
    expect(own.borderHost.test('mx.google.com')).toBe(true);
  });

  it.each([
    ['provider = "self-hosted"', /mailbox\.authserv_id: is required with provider = "self-hosted".*provider detect --file/],
    ["provider = \"self-hosted\"\nauthserv_id = 'mail\\.example\\.org'", /mailbox\.border_host: is required/],
    ['provider = "hotmail"', /mailbox\.provider: must be one of "fastmail", "gmail", "outlook", "icloud", "yahoo", "self-hosted", got "hotmail"$/m],
    // A typo of an allowed value gets the nearest one, as an unknown key gets the nearest known key.
    ['provider = "gmial"', /mailbox\.provider: must be one of "fastmail", "gmail", "outlook", "icloud", "yahoo", "self-hosted", got "gmial"; did you mean "gmail"\?$/m],
    ['provider = "outlook"\nverify_dkim = false', /mailbox\.verify_dkim: must stay true with provider = "outlook"/],
    ["provider = \"self-hosted\"\nauthserv_id = '.*'\nborder_host = 'mx'", /mailbox\.authserv_id: matches hosts that are not your provider's/],
  ])('refuses %s', (lines, msg) => {
    expect(() => loadConfig(makeConfigDir(withMailbox(lines)).configPath)).toThrow(msg);
  });

  it('OAuth2: names auth login when the refresh token file is missing, and wants https endpoints', () => {
    const imap = (extra: string): string =>
      minimalToml()
        .replace('kind = "maildir"\n', '')
        .replace('[mailbox.maildir]\npath = "Maildir"', `kind = "imap"\nprovider = "outlook"\n[mailbox.imap]\nhost = "outlook.office365.com"\nuser = "me@example.com"\nauth = "oauth2"\noauth2_client_id = "abc"\noauth2_refresh_token_file = "rt"\n${extra}`);
    const c = makeConfigDir(imap(''));
    // The command repeats this config's --config (src/config/config-path.ts).
    expect(() => loadConfig(c.configPath)).toThrow(`/rt does not exist yet; sign in once with: a2a-mailbridge --config ${c.configPath} auth login microsoft`);
    expect(loadConfig(c.configPath, { allowMissingGrant: true }).mailbox.imap!.oauth2).toMatchObject({ provider: 'microsoft', refreshToken: null, scope: 'https://outlook.office.com/IMAP.AccessAsUser.All offline_access' });
    writeSecret(c.dir, 'rt', 'rt-1');
    expect(loadConfig(c.configPath).mailbox.imap!.oauth2!.tokenUrl.href).toBe('https://login.microsoftonline.com/common/oauth2/v2.0/token');
    const plain = makeConfigDir(imap('oauth2_token_url = "http://login.example/token"'));
    writeSecret(plain.dir, 'rt', 'rt-1');
    expect(() => loadConfig(plain.configPath)).toThrow(/oauth2_token_url: must be an https URL \(http only for a loopback address\)/);
  });
});
