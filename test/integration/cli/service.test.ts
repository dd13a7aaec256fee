import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';
import { checkPlist } from '../../helpers/plist.js';

/**
 * `service install`: the plist is valid XML following the plist DTD (a
 * structural check in test/helpers/plist.ts, since `plutil` exists only on macOS), and the
 * systemd unit passes `systemd-analyze verify` where that binary exists.
 */
let c: ConfigDir;
let home: string;
const built = existsSync(resolve('dist/cli/main.js'));
const systemdAnalyze = spawnSync('systemd-analyze', ['--version'], { stdio: 'ignore' }).status === 0;

beforeAll(() => {
  c = makeConfigDir(minimalToml());
  mkdirSync(join(c.dir, 'state'), { mode: 0o700 });
  home = mkdtempSync(join(tmpdir(), 'mb-home-'));
});
const cleanup: string[] = [];
afterAll(() => {
  for (const d of [c?.dir, home, ...cleanup]) if (d) rmSync(d, { recursive: true, force: true });
});

const env = () => ({ HOME: home, XDG_CONFIG_HOME: join(home, 'xdg') });
const install = (...args: string[]) => runCli(['--config', c.configPath, 'service', 'install', ...args], { env: env() });

describe('service install --dry-run', () => {
  it('the LaunchAgent plist parses as XML, follows the plist DTD, and holds only absolute paths', async () => {
    const r = await install('--launchd', '--dry-run');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain(`# would write ${home}/Library/LaunchAgents/com.a2a-mailbridge.plist`);
    expect(r.stderr).toMatch(/# then load it with: launchctl bootstrap gui\/\d+ \S+\/Library\/LaunchAgents\/com\.a2a-mailbridge\.plist/);
    const { errors, value } = checkPlist(r.stdout);
    expect(errors).toEqual([]);
    const plist = value as Record<string, unknown>;
    expect(plist).toMatchObject({
      Label: 'com.a2a-mailbridge',
      ProgramArguments: [process.execPath, '--max-semi-space-size=4', resolve('dist/cli/main.js'), '--config', c.configPath, 'serve'],
      WorkingDirectory: join(c.dir, 'state'),
      KeepAlive: true,
      RunAtLoad: true,
      ThrottleInterval: 10,
      Umask: 63,
    });
    for (const p of [...(plist.ProgramArguments as string[]).filter((a) => a.includes('/')), plist.WorkingDirectory, plist.StandardOutPath, plist.StandardErrorPath]) {
      expect(String(p).startsWith('/'), String(p)).toBe(true);
    }
    expect(r.stdout).not.toMatch(/@[A-Z_]+@|~\//);
    expect(existsSync(join(home, 'Library'))).toBe(false);
  });

  it('the systemd user unit passes systemd-analyze verify', async () => {
    const r = await install('--systemd', '--dry-run');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain(`# would write ${home}/xdg/systemd/user/a2a-mailbridge.service`);
    expect(r.stderr).toContain('# then load it with: systemctl --user daemon-reload && systemctl --user enable --now a2a-mailbridge.service');
    expect(r.stdout).toContain(`ExecStart=${process.execPath} --max-semi-space-size=4 ${resolve('dist/cli/main.js')} --config ${c.configPath} serve`);
    expect(r.stdout).toContain(`ReadWritePaths=${join(c.dir, 'state')}`);
    expect(existsSync(join(home, 'xdg'))).toBe(false);
    if (!systemdAnalyze) {
      console.log('note: systemd-analyze is not installed here; the unit was not verified by systemd');
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'mb-unit-'));
    cleanup.push(dir);
    const unit = join(dir, 'a2a-mailbridge.service');
    writeFileSync(unit, r.stdout);
    const v = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' });
    // verify reports unknown keys and unparsable values as warnings on stderr with status 0: both must be clean.
    expect(v.stderr.split('\n').filter((l) => l.includes('a2a-mailbridge'))).toEqual([]);
    expect(v.status).toBe(0);
  });

  it('--launchd with --systemd is a usage error', async () => {
    const r = await install('--launchd', '--systemd', '--dry-run');
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('a2a-mailbridge: choose one of --launchd and --systemd\n');
  });
});

describe('service install', () => {
  it.skipIf(!built)('writes the unit (0644) where systemd looks, prints the command, and replaces it only with --force', async () => {
    const target = join(home, 'xdg', 'systemd', 'user', 'a2a-mailbridge.service');
    const r = await install('--systemd');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(`wrote ${target}\nload it with:\n  systemctl --user daemon-reload && systemctl --user enable --now a2a-mailbridge.service\n`);
    expect(statSync(target).mode & 0o777).toBe(0o644);
    expect(readFileSync(target, 'utf8')).toContain('ProtectSystem=strict');
    const again = await install('--systemd');
    expect(again.status).toBe(1);
    expect(again.stderr).toBe(`a2a-mailbridge: refusing to overwrite ${target}; pass --force to replace it\n`);
    expect((await install('--systemd', '--force')).status).toBe(0);
  });

  it.skipIf(!built)('writes the LaunchAgent under ~/Library/LaunchAgents', async () => {
    const r = await install('--launchd');
    expect(r.status, r.stderr).toBe(0);
    const target = join(home, 'Library', 'LaunchAgents', 'com.a2a-mailbridge.plist');
    expect(r.stdout).toMatch(new RegExp(`^wrote ${target}\\nload it with:\\n  launchctl bootstrap gui/\\d+ ${target}\\n$`));
    expect(checkPlist(readFileSync(target, 'utf8')).errors).toEqual([]);
  });

  it('a config that does not load is refused before anything is written', async () => {
    const bad = makeConfigDir(minimalToml({ listen: '0.0.0.0:1' }));
    cleanup.push(bad.dir);
    const r = await runCli(['--config', bad.configPath, 'service', 'install', '--systemd'], { env: { HOME: bad.dir, XDG_CONFIG_HOME: join(bad.dir, 'xdg') } });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/config key server\.listen/);
    expect(existsSync(join(bad.dir, 'xdg'))).toBe(false);
  });
});
