import { describe, expect, it } from 'vitest';
import { ConfigErrors, loadConfig } from '../../../src/config/config.js';
import { MAX_LISTED_KEY_ERRORS } from '../../../src/config/fields.js';
import { doctor } from '../../../src/cli/doctor.js';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';
import { runCli } from '../../helpers/cli.js';

/** A config with `n` unknown keys `k0 = 1` … in [server], after a typo of a known key (bearer). */
function manyUnknown(n: number): string {
  const keys = Array.from({ length: n }, (_, i) => `k${i} = 1`).join('\n');
  return minimalToml({ listen: '127.0.0.1:0' }).replace('[server]', () => `[server]\nbearer = "x"\n${keys}`);
}

function thrown(file: string): ConfigErrors {
  try {
    loadConfig(file);
  } catch (e) {
    return e as ConfigErrors;
  }
  throw new Error('loaded');
}

describe('a config with thousands of unknown keys (attack review 2: 94,000 made doctor print 28 MB)', () => {
  const c = makeConfigDir(manyUnknown(5000));

  it('lists the first 20 key errors, then one line counting the rest', () => {
    const err = thrown(c.configPath);
    expect(err).toBeInstanceOf(ConfigErrors);
    const lines = err.message.split('\n');
    expect(lines).toHaveLength(MAX_LISTED_KEY_ERRORS + 1);
    expect(lines[0]).toMatch(/^config key server\.bearer: is not a known key; did you mean server\.bearer_file\? \(known in \[server\]: .*listen/);
    expect(lines[1]).toBe('config key server.k0: is not a known key; the keys known in [server] are listed with server.bearer');
    expect(lines.at(-1)).toBe(`… and ${5001 - MAX_LISTED_KEY_ERRORS} more key problems (unknown or misplaced keys, bad values); fix the ones above, then check again to see the rest`);
    // the known keys are listed once, on the table's first line
    expect(lines.filter((l) => l.includes('listen')).length).toBe(1);
  });

  it('a later typo in the same table names its nearest key without the list', () => {
    const typo = makeConfigDir(minimalToml().replace('[server]', () => '[server]\ncolour = 1\nlisen = "x"'));
    expect(thrown(typo.configPath).message.split('\n')).toEqual([
      expect.stringMatching(/^config key server\.colour: is not a known key; the keys known in \[server\] are: .*listen/),
      'config key server.lisen: is not a known key; did you mean server.listen?',
    ]);
  });

  it('doctor fails one config check per listed error and one for the rest', async () => {
    const checks = (await doctor(c.configPath)).checks.filter((x) => x.name === 'config');
    expect(checks).toHaveLength(MAX_LISTED_KEY_ERRORS + 1);
    expect(checks.at(-1)).toMatchObject({ status: 'fail', detail: `… and ${5001 - MAX_LISTED_KEY_ERRORS} more key problems (unknown or misplaced keys, bad values)`, fix: 'fix the ones above, then check again to see the rest' });
  });

  it('serve prints the same lines whole and exits 2', async () => {
    const r = await runCli(['--config', c.configPath, 'serve']);
    expect(r.status).toBe(2);
    expect(r.stderr.split('\n')).toHaveLength(MAX_LISTED_KEY_ERRORS + 2);
    expect(r.stderr).toMatch(/\n… and 4981 more key problems \(unknown or misplaced keys, bad values\); fix the ones above, then check again to see the rest\n$/);
  });
});

/** What loading `toml` throws, one line per problem. */
function problems(toml: string): string[] {
  return thrown(makeConfigDir(toml).configPath).message.split('\n');
}

describe('a bad value is one more problem: the later tables are still read, in the same run', () => {
  it('reports bad values and unknown keys of every table after the first bad value, each naming its key and fix', () => {
    const other = '[[agents]]\nname = "other"\naddress = "other@agent.example"\ncolour = 1\n[agents.webhook]\nurl = "http://127.0.0.1:9/hook"\nauth = "bearer"\nbearer_file = "webhook-bearer"\n';
    const toml = minimalToml({ extraAgent: other })
      .replace('bearer_file = "bearer"\n', 'bearer_file = "bearer"\nmax_body_bytes = "big"\n')
      .replace('[store]\n', '[store]\ncolour = 1\n')
      .replace('address = "me@bridge.test"\n', 'address = "me@bridge.test"\ncheck_interval_s = -1\n')
      .replace('path = "Maildir"\n', 'path = "Maildir"\nfolder = "x"\n')
      .replace('[[agents]]\nname = "grok"\n', '[log]\nlevel = "loud"\n\n[dns]\nservers = ["9.9.9.9"]\nsrvers = 1\n\n[[agents]]\nname = "grok"\ndeadline_s = 1\n');
    expect(problems(toml)).toEqual([
      'config key server.max_body_bytes: must be an integer from 1024 to 16777216, got "big"',
      'config key store.colour: is not a known key; the keys known in [store] are: path',
      'config key mailbox.check_interval_s: must be an integer from 0 to 3600, got -1',
      'config key mailbox.maildir.folder: is not a known key; the keys known in [mailbox.maildir] are: path',
      'config key log.level: must be one of "fatal", "error", "warn", "info", "debug", "trace", "silent", got "loud"',
      'config key dns.srvers: is not a known key; did you mean dns.servers? (known in [dns]: servers)',
      'config key agents[0].deadline_s: must be an integer from 10 to 2592000, got 1',
      expect.stringMatching(/^config key agents\[1\]\.colour: is not a known key; the keys known in \[agents\] are: /),
    ]);
  });

  it('a bad value in each of many tables: still at most 20 listed, then one line counting the rest', () => {
    const agents = Array.from({ length: 30 }, (_, i) => `[[agents]]\nname = "a${i}"\naddress = "a${i}@agent.example"\nmax_open_tasks = 0\n[agents.webhook]\nurl = "http://127.0.0.1:9/hook"\nauth = "bearer"\nbearer_file = "webhook-bearer"\n`).join('');
    const lines = problems(minimalToml({ extraAgent: agents }).replace('bearer_file = "bearer"\n', 'bearer_file = "bearer"\nmax_connections = 1\n'));
    expect(lines).toHaveLength(MAX_LISTED_KEY_ERRORS + 1);
    expect(lines[0]).toBe('config key server.max_connections: must be an integer from 2 to 10000, got 1');
    expect(lines[1]).toBe('config key agents[1].max_open_tasks: must be an integer from 1 to 100000, got 0');
    expect(lines.at(-1)).toBe(`… and ${31 - MAX_LISTED_KEY_ERRORS} more key problems (unknown or misplaced keys, bad values); fix the ones above, then check again to see the rest`);
  });
});
