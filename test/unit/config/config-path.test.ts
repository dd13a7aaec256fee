import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commandLine, configFlag, configPath, missingConfigFix, shellLine, shellWord } from '../../../src/config/config-path.js';
import { missingSecretFix } from '../../../src/config/secret-kinds.js';
import { names, paste, SHELLS } from '../../helpers/paste.js';

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

  // Tester's report: `run: chmod go-w /work/trial2/odd $(touch PWNED) dir`, pasted, made PWNED;
  // `secret new agents[0].webhook.secret_file` stopped zsh with "no matches found".
  const hostile = ['odd $(touch PWNED) dir', 'a`touch PWNED`b', "it's", 'agents[0].webhook.secret_file', '*', 'x?', '~', '=ls', '!!', 'a;touch PWNED', 'a\nb', 'new\nline', '{a,b}', '', '-n', 'plain/a-b_c.d'];
  it.each(SHELLS)('every word reads back as itself in %s, and a paste runs nothing it holds', (shell) => {
    const dir = mkdtempSync(join(root, 'paste-'));
    writeFileSync(join(dir, 'agents0.webhook.secret_file'), ''); // a file `[0]` would glob to in bash
    const before = names(dir);
    for (const w of hostile) expect(paste(shell, `printf '%s\\n' ${shellWord(w)}`, dir)).toBe(`${w}\n`);
    expect(paste(shell, `printf '%s|' ${shellLine(...hostile)}`, dir)).toBe(hostile.map((w) => `${w}|`).join(''));
    expect(names(dir)).toEqual(before);
  });

  it('quotes a secret key with [i] in the secret new it suggests', () => {
    expect(missingSecretFix('agents[0].webhook.secret_file', '/s/w', '/c/config.toml')).toBe("create it with: a2a-mailbridge --config /c/config.toml secret new 'agents[0].webhook.secret_file'");
    expect(missingSecretFix('mailbox.imap.password_file', '/my secrets/$(id)', '')).toBe("create it with mode 0600: umask 077 && printf '%s' '<secret>' > '/my secrets/$(id)'");
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
