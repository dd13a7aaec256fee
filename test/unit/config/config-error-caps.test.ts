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
    expect(lines.at(-1)).toBe(`… and ${5001 - MAX_LISTED_KEY_ERRORS} more unknown or misplaced keys; fix the ones above, then check again to see the rest`);
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
    expect(checks.at(-1)).toMatchObject({ status: 'fail', detail: `… and ${5001 - MAX_LISTED_KEY_ERRORS} more unknown or misplaced keys`, fix: 'fix the ones above, then check again to see the rest' });
  });

  it('serve prints the same lines whole and exits 2', async () => {
    const r = await runCli(['--config', c.configPath, 'serve']);
    expect(r.status).toBe(2);
    expect(r.stderr.split('\n')).toHaveLength(MAX_LISTED_KEY_ERRORS + 2);
    expect(r.stderr).toMatch(/\n… and 4981 more unknown or misplaced keys; fix the ones above, then check again to see the rest\n$/);
  });
});
