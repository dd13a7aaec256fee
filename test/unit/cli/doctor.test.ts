import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { doctor, formatDoctor, secretRefs, splitFix, type DoctorReport } from '../../../src/cli/doctor.js';
import { hermesSnippet } from '../../../src/cli/hermes-snippet.js';
import type { Config } from '../../../src/config/config.js';
import { makeConfigDir, minimalToml, writeSecret } from '../../helpers/config-dir.js';

describe('doctor: pure parts', () => {
  it('finds every secret file the loader would read, per mailbox kind and webhook auth', () => {
    const doc = {
      server: { bearer_file: 'secrets/bearer' },
      mailbox: { imap: { password_file: '/abs/imap' } },
      agents: [
        { webhook: { secret_file: 's1' } },
        { webhook: { auth: 'bearer', bearer_file: 'b2', secret_file: 'unused' } },
        { webhook: { auth: 'both', bearer_file: 'b3', secret_file: 's3' } },
      ],
    };
    expect(secretRefs(doc, '/cfg').map((r) => [r.key, r.path])).toEqual([
      ['server.bearer_file', '/cfg/secrets/bearer'],
      ['mailbox.imap.password_file', '/abs/imap'],
      ['agents[0].webhook.secret_file', '/cfg/s1'],
      ['agents[1].webhook.bearer_file', '/cfg/b2'],
      ['agents[2].webhook.bearer_file', '/cfg/b3'],
      ['agents[2].webhook.secret_file', '/cfg/s3'],
    ]);
    expect(secretRefs({ mailbox: { kind: 'maildir', imap: { password_file: 'x' } } }, '/cfg')).toEqual([]);
    expect(secretRefs({ agents: 'not a list', server: 3 }, '/cfg')).toEqual([]);
  });

  it('splits "<problem>; <fix>" messages into a one-line fix', () => {
    expect(splitFix('secret file /s has mode 0644, readable by others; run: chmod 600 /s')).toEqual({ problem: 'secret file /s has mode 0644, readable by others', fix: 'chmod 600 /s' });
    expect(splitFix('is empty')).toEqual({ problem: 'is empty' });
    // A path holding `; ` is part of the problem, and of the quoted fix: the fix is what follows `; run: `.
    expect(splitFix("secret file /a; b has mode 0644, readable by others; run: chmod 600 '/a; b'")).toEqual({ problem: 'secret file /a; b has mode 0644, readable by others', fix: "chmod 600 '/a; b'" });
  });

  it('the Hermes snippet names the exact loopback URL and a placeholder, never a token', () => {
    const config = { server: { host: '127.0.0.1', port: 8765 }, agents: [{ name: 'grok' }, { name: 'claude' }] } as unknown as Config;
    const s = hermesSnippet(config, '/home/me/.config/a2a-mailbridge/secrets/bearer');
    expect(s.yaml).toBe(
      [
        'a2a_agents:',
        '  grok:',
        '    url: http://127.0.0.1:8765/agents/grok',
        '    auth: {type: bearer, token: "<token from /home/me/.config/a2a-mailbridge/secrets/bearer>"}',
        '    timeout: 120',
        '  claude:',
        '    url: http://127.0.0.1:8765/agents/claude',
        '    auth: {type: bearer, token: "<token from /home/me/.config/a2a-mailbridge/secrets/bearer>"}',
        '    timeout: 120',
      ].join('\n'),
    );
    const long = hermesSnippet({ server: { host: '127.0.0.1', port: 1, callerTimeoutMs: 330_000 }, agents: [{ name: 'a' }] } as unknown as Config, '/b');
    expect(long.yaml).toContain('    timeout: 330');
  });

  it('port 0 in server.listen: the live port of the running bridge, else no URL but how to find the port (never :0)', () => {
    const zero = { file: '/c/config.toml', server: { host: '::1', port: 0 }, agents: [{ name: 'a' }] } as unknown as Config;
    const live = hermesSnippet(zero, '/b', 41234);
    expect(live.agents).toEqual([{ name: 'a', url: 'http://[::1]:41234/agents/a' }]);
    expect(live.yaml.split('\n').slice(0, 4)).toEqual([
      "# server.listen has port 0: 41234 is the port this config's running bridge picked when it started.",
      '# It changes at each start: set a fixed port in server.listen so these URLs stay right.',
      'a2a_agents:',
      '  a:',
    ]);
    expect(live.yaml).toContain('    url: http://[::1]:41234/agents/a\n');
    const stopped = hermesSnippet(zero, '/b', null);
    expect(stopped.agents).toEqual([{ name: 'a', url: null }]);
    expect(stopped.yaml).not.toMatch(/:0\b/);
    expect(stopped.yaml).toContain('    url: http://[::1]:<port>/agents/a\n');
    expect(stopped.yaml.split('\n').slice(0, 8)).toEqual([
      "# server.listen has port 0: serve picks a free port each time it starts, and this config's",
      '# bridge is not running, so there is no URL yet (<port> below). To learn the port, start it:',
      '#   a2a-mailbridge --config /c/config.toml serve',
      '# then run doctor again, which prints the URLs with the live port (status names it too:',
      '# "bridge answering at …"):',
      '#   a2a-mailbridge --config /c/config.toml doctor',
      '# Or set a fixed port in server.listen.',
      'a2a_agents:',
    ]);
    // A fixed port: the live port is not asked for, and no comment.
    expect(hermesSnippet({ ...zero, server: { host: '127.0.0.1', port: 8765 } } as unknown as Config, '/b', 41234).yaml).toMatch(/^a2a_agents:\n {2}a:\n {4}url: http:\/\/127\.0\.0\.1:8765\/agents\/a\n/);
  });

  it('prints one line per check, a fix line under each failure, and the summary', () => {
    const r: DoctorReport = {
      ok: false,
      config: '/c.toml',
      checks: [
        { name: 'config file', status: 'ok', detail: '/c.toml (TOML ok)' },
        { name: 'secret server.bearer_file', status: 'fail', detail: 'mode 0644', fix: 'chmod 600 /b' },
        { name: 'mailbox', status: 'skip', detail: 'not tried', fix: 'fix the password first' },
        { name: 'webhook grok', status: 'fail', detail: 'evil \x1b[2J text', fix: 'check the URL' },
      ],
      hermes: null,
    };
    expect(formatDoctor(r).split('\n')).toEqual([
      'a2a-mailbridge doctor: /c.toml',
      'ok    config file                /c.toml (TOML ok)',
      'fail  secret server.bearer_file  mode 0644',
      '      fix: chmod 600 /b',
      'skip  mailbox                    not tried',
      '      fix: fix the password first',
      'fail  webhook grok               evil \\u{1b}[2J text',
      '      fix: check the URL',
      '',
      '2 checks failed, 1 skipped',
    ]);
  });

  it('a warning does not fail doctor, but the summary no longer says "all checks passed"', () => {
    const r: DoctorReport = {
      ok: true,
      config: '/c.toml',
      checks: [
        { name: 'config', status: 'ok', detail: 'fine' },
        { name: 'example identities', status: 'warn', detail: 'mailbox.address = me@example.com is an example name', fix: 'replace it' },
      ],
      hermes: null,
    };
    expect(formatDoctor(r).split('\n').slice(1)).toEqual([
      'ok    config              fine',
      'warn  example identities  mailbox.address = me@example.com is an example name',
      '      fix: replace it',
      '',
      'no check failed, but 1 warning to fix before real use',
    ]);
  });

  it('a TOML syntax error names the line and shows it', async () => {
    const c = makeConfigDir('[server]\nlisten = "127.0.0.1:8765\nbearer_file = "bearer"\n');
    const r = await doctor(c.configPath);
    expect(r.ok).toBe(false);
    expect(r.checks).toEqual([
      {
        name: 'config file',
        status: 'fail',
        detail: `${c.configPath} is not valid TOML at line 2, column 25: control characters are not allowed in strings — is a closing quote (") missing?`,
        fix: 'correct line 2, column 25: listen = "127.0.0.1:8765',
      },
    ]);
  });

  it('a config path that is a FIFO is one failure at once (the read blocked until a writer came)', async () => {
    const c = makeConfigDir(minimalToml());
    const fifo = join(c.dir, 'fifo.toml');
    execFileSync('mkfifo', [fifo]);
    const r = await doctor(fifo);
    expect(r.checks.filter((x) => x.status === 'fail')).toEqual([
      { name: 'config file', status: 'fail', detail: `${fifo} is not a regular file (a FIFO)`, fix: 'point --config (or A2A_MAILBRIDGE_CONFIG) at the config file itself' },
    ]);
  });

  it('a config file others may write is one failure, said by the config file check; the config is not validated twice', async () => {
    const c = makeConfigDir(minimalToml());
    chmodSync(c.configPath, 0o664);
    const r = await doctor(c.configPath);
    expect(r.ok).toBe(false);
    expect(r.checks.filter((x) => x.status === 'fail')).toEqual([
      { name: 'config file', status: 'fail', detail: `${c.configPath} is writable by others (mode 0664), so they could redirect the bridge`, fix: `chmod go-w ${c.configPath}` },
    ]);
    expect(r.checks.find((x) => x.name === 'config')).toMatchObject({ status: 'skip', fix: 'fix the config file first' });
  });

  it('OAuth2 before auth login: the missing refresh-token file has one fix, the sign-in (never a printf of a secret)', async () => {
    const toml = minimalToml()
      .replace('kind = "maildir"\n', 'provider = "gmail"\n')
      .replace(
        '[mailbox.maildir]\npath = "Maildir"',
        '[mailbox.imap]\nhost = "127.0.0.1"\nport = 1\ntls = false\nuser = "u"\nauth = "oauth2"\noauth2_client_id = "cid"\noauth2_refresh_token_file = "refresh-token"',
      );
    const c = makeConfigDir(toml);
    const r = await doctor(c.configPath);
    const login = `sign in once with: a2a-mailbridge --config ${c.configPath} auth login google`;
    expect(r.checks.find((x) => x.name === 'secret mailbox.imap.oauth2_refresh_token_file')).toEqual({
      name: 'secret mailbox.imap.oauth2_refresh_token_file',
      status: 'fail',
      detail: `${c.dir}/refresh-token does not exist yet`,
      fix: login,
    });
    const fixes = r.checks.filter((x) => x.status === 'fail').map((x) => x.fix);
    expect(fixes).toEqual([login]);
    expect(formatDoctor(r)).not.toMatch(/printf/);
  });
});

describe('doctor on a bearer file that is too short', () => {
  it('fails the secret file itself (its path, its length, the minimum) with secret new bearer --force as the fix, and not the config key', async () => {
    mkdirSync(join(tmpdir(), 'mb doctor'), { recursive: true, mode: 0o700 });
    const c = makeConfigDir(minimalToml(), join(tmpdir(), 'mb doctor'));
    writeSecret(c.dir, 'bearer', 'hello');
    const r = await doctor(c.configPath);
    const bearer = join(c.dir, 'bearer');
    expect(r.checks.find((x) => x.name === 'secret server.bearer_file')).toEqual({
      name: 'secret server.bearer_file',
      status: 'fail',
      detail: `secret file ${bearer} holds 5 characters; the bearer must be at least 16`,
      fix: `a2a-mailbridge --config '${c.configPath}' secret new bearer --force`,
    });
    expect(r.checks.find((x) => x.name === 'config')).toMatchObject({ status: 'skip', fix: 'fix the secret file of server.bearer_file first' });
    expect(r.checks.filter((x) => x.status === 'fail').map((x) => x.name)).toEqual(['secret server.bearer_file']);
    rmSync(c.dir, { recursive: true, force: true });
  });
});
