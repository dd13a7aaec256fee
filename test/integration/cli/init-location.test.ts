import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { paste } from '../../helpers/paste.js';

/**
 * Where `init` writes without --dir, against what `--help` and `init --help` say: the folder of
 * the config file as every command finds it (src/config/config-path.ts) — --config, else
 * $A2A_MAILBRIDGE_CONFIG, else $XDG_CONFIG_HOME/a2a-mailbridge, else ~/.config/a2a-mailbridge.
 */
const root = mkdtempSync(join(tmpdir(), 'mb-init-location-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The environment of a user whose home is `home`, with only the variables given set. */
const user = (home: string, vars: Record<string, string> = {}): NodeJS.ProcessEnv => ({ HOME: home, XDG_CONFIG_HOME: undefined, A2A_MAILBRIDGE_CONFIG: undefined, ...vars });

describe('init without --dir', () => {
  it('--help and init --help name each place in the order they are tried', async () => {
    const top = (await runCli(['--help'])).stdout.replace(/\s+/g, ' ');
    expect(top).toContain('config file (default: $A2A_MAILBRIDGE_CONFIG, else $XDG_CONFIG_HOME/a2a-mailbridge/config.toml, ~/.config/… when XDG_CONFIG_HOME is unset)');
    const init = (await runCli(['init', '--help'])).stdout.replace(/\s+/g, ' ');
    expect(init).toContain(
      '--dir <dir> the folder (default: that of the config file as every command finds it: --config, $A2A_MAILBRIDGE_CONFIG, $XDG_CONFIG_HOME/a2a-mailbridge, ~/.config/a2a-mailbridge); the config is <dir>/config.toml, and a --config naming another file is refused',
    );
  });

  it('writes into each of those places, in that order', async () => {
    const home = join(root, 'home');
    const plain = await runCli(['init'], { env: user(home) });
    expect(plain.status, plain.stderr).toBe(0);
    expect(existsSync(join(home, '.config/a2a-mailbridge/config.toml'))).toBe(true);

    const xdg = join(root, 'xdg');
    const withXdg = await runCli(['init'], { env: user(join(root, 'home2'), { XDG_CONFIG_HOME: xdg }) });
    expect(withXdg.status, withXdg.stderr).toBe(0);
    expect(existsSync(join(xdg, 'a2a-mailbridge/config.toml'))).toBe(true);
    expect(existsSync(join(root, 'home2'))).toBe(false);

    const named = join(root, 'named/mailbridge.toml');
    const withEnv = await runCli(['init'], { env: user(join(root, 'home3'), { XDG_CONFIG_HOME: join(root, 'xdg3'), A2A_MAILBRIDGE_CONFIG: named }) });
    expect(withEnv.status, withEnv.stderr).toBe(0);
    expect(existsSync(named)).toBe(true);
    expect(existsSync(join(root, 'named/secrets/bearer'))).toBe(true);
    expect(existsSync(join(root, 'xdg3'))).toBe(false);
  });

  // Tester's report: a printed fix with a path holding `$(…)` ran it when pasted.
  it('into a folder others may enter, suggests a chmod that, pasted, closes that folder and runs nothing its name holds', async () => {
    const odd = join(root, "odd $(touch PWNED) `touch PWNED` it's [0] dir");
    mkdirSync(odd);
    chmodSync(odd, 0o755);
    const r = await runCli(['init', '--dir', odd], { env: user(join(root, 'home4')) });
    expect(r.status, r.stderr).toBe(0);
    const fix = /^note: .* has mode 0755; consider: (.*)$/m.exec(r.stdout)?.[1];
    expect(fix).toBe(`chmod 700 '${odd.replaceAll("'", `'\\''`)}'`);
    paste('sh', fix!, root);
    expect(statSync(odd).mode & 0o777).toBe(0o700);
    expect(readdirSync(root).filter((n) => n.includes('PWNED') && !n.startsWith('odd'))).toEqual([]);
  });
});

// Fresh user's report: `--config /tmp/newcfg/my.toml init --dir /tmp/other` wrote /tmp/other/config.toml, --config dropped unsaid.
describe('init with both --config and --dir', () => {
  it('refuses two different places (exit 2), naming both and the command for each, and writes nothing', async () => {
    const named = join(root, 'newcfg/my.toml');
    const other = join(root, 'other');
    const r = await runCli(['--config', named, 'init', '--dir', other], { env: user(join(root, 'home5')) });
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      `a2a-mailbridge: --config ${named} and --dir ${other} name different places (--dir writes ${join(other, 'config.toml')}); give one: ` +
        `a2a-mailbridge --config ${named} init writes that file and its secrets/, state/ and logs/ beside it, a2a-mailbridge init --dir ${other} writes config.toml in that folder\n`,
    );
    expect(r.stdout).toBe('');
    expect(existsSync(join(root, 'newcfg'))).toBe(false);
    expect(existsSync(other)).toBe(false);
  });

  it('takes a --config that names the very file --dir writes', async () => {
    const dir = join(root, 'same');
    const r = await runCli(['--config', join(dir, 'config.toml'), 'init', '--dir', dir], { env: user(join(root, 'home6')) });
    expect(r.status, r.stderr).toBe(0);
    expect(existsSync(join(dir, 'config.toml'))).toBe(true);
    expect(existsSync(join(dir, 'secrets/bearer'))).toBe(true);
  });
});
