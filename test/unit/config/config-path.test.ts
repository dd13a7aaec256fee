import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commandLine, configFlag, configPath, missingConfigFix, shellWord } from '../../../src/config/config-path.js';

/** The commands a message suggests repeat the --config the user gave (fresh-user trial: `secret new` and `init` did not). */
const root = mkdtempSync(join(tmpdir(), 'mb-config-path-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const saved = { A2A_MAILBRIDGE_CONFIG: process.env.A2A_MAILBRIDGE_CONFIG, XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME };
beforeEach(() => {
  delete process.env.A2A_MAILBRIDGE_CONFIG;
  delete process.env.XDG_CONFIG_HOME;
});
afterEach(() => {
  for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k];
  else process.env[k] = v;
});

describe('the command a message suggests', () => {
  it('repeats --config <file> (absolute) unless the command finds that file by itself', () => {
    const home = join(homedir(), '.config', 'a2a-mailbridge', 'config.toml');
    expect(configPath(undefined)).toBe(home);
    expect(commandLine(home, 'doctor')).toBe('a2a-mailbridge doctor');
    expect(commandLine('/srv/cfg2/config.toml', 'secret new server.bearer_file')).toBe('a2a-mailbridge --config /srv/cfg2/config.toml secret new server.bearer_file');
    // A relative --config is made absolute: the suggestion works from any folder.
    expect(configFlag('cfg2/config.toml')).toBe(` --config ${join(process.cwd(), 'cfg2/config.toml')}`);
    // $A2A_MAILBRIDGE_CONFIG names the config the command finds without --config.
    process.env.A2A_MAILBRIDGE_CONFIG = '/srv/cfg2/config.toml';
    expect(commandLine('/srv/cfg2/config.toml', 'doctor')).toBe('a2a-mailbridge doctor');
    expect(commandLine(home, 'doctor')).toBe(`a2a-mailbridge --config ${home} doctor`);
    // No config known: no flag.
    expect(commandLine('', 'tasks')).toBe('a2a-mailbridge tasks');
  });

  it('quotes a path a shell would split or expand', () => {
    expect(shellWord('/a/b-c_d.toml')).toBe('/a/b-c_d.toml');
    expect(shellWord('/my configs/it\'s $HOME.toml')).toBe(`'/my configs/it'\\''s $HOME.toml'`);
    expect(commandLine('/my configs/c.toml', 'doctor')).toBe("a2a-mailbridge --config '/my configs/c.toml' doctor");
  });

  it('for a missing config: the init that writes that very file where its folder can be written, else init --dir', () => {
    const file = join(root, 'cfg2', 'config.toml'); // cfg2 does not exist yet: init creates it
    expect(missingConfigFix(file)).toBe(`create it with: a2a-mailbridge --config ${file} init, or point --config at the config file you have`);
    expect(missingConfigFix(configPath(undefined))).toMatch(/^create it with: a2a-mailbridge init, or pass --config <file>$|cannot be written/);
    // A folder that cannot be made: a regular file stands where it would be.
    writeFileSync(join(root, 'plain'), '');
    const under = join(root, 'plain', 'config.toml');
    expect(missingConfigFix(under)).toBe(
      `${join(root, 'plain')} cannot be written: create a config with: a2a-mailbridge init --dir <a folder of yours>, then pass --config <that folder>/config.toml; or point --config at the config file you have`,
    );
  });
});
