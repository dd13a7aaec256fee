import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { VERSION } from '../../../src/a2a/agent-card.js';
import { startApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/config.js';
import { createLogger } from '../../../src/log.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';
import { freePort } from '../../helpers/free-port.js';
import { checkPlist } from '../../helpers/plist.js';

/**
 * `service install`: the plist is valid XML following the plist DTD (a
 * structural check in test/helpers/plist.ts, since `plutil` exists only on macOS), and the
 * systemd unit passes `systemd-analyze verify` where that binary exists. `service uninstall` and
 * `service status` run with no service manager on PATH, so they behave the same on
 * every machine.
 */
let c: ConfigDir;
let home: string;
const built = existsSync(resolve('dist/cli/main.js'));
const systemdAnalyze = spawnSync('systemd-analyze', ['--version'], { stdio: 'ignore' }).status === 0;
/** The hardened unit cannot see /tmp: a checkout or Node under it cannot be installed (the refusal is tested below). */
const installInTmp = ['/tmp/', '/var/tmp/', '/dev/shm/'].some((d) => resolve('.').startsWith(d) || process.execPath.startsWith(d));

beforeAll(() => {
  // Not under /tmp (the unit could not see it): the checkout's own tmp/, which git ignores.
  mkdirSync(resolve('tmp'), { recursive: true });
  c = makeConfigDir(minimalToml(), resolve('tmp'));
  mkdirSync(join(c.dir, 'state'), { mode: 0o700 });
  home = mkdtempSync(join(tmpdir(), 'mb-home-'));
});
const cleanup: string[] = [];
afterAll(() => {
  for (const d of [c?.dir, home, ...cleanup]) if (d) rmSync(d, { recursive: true, force: true });
});

/** No service manager on PATH: uninstall and status then say so instead of asking this machine's. */
const env = () => ({ HOME: home, XDG_CONFIG_HOME: join(home, 'xdg'), PATH: join(home, 'no-bin') });
const install = (...args: string[]) => runCli(['--config', c.configPath, 'service', 'install', ...args], { env: env() });
const service = (...args: string[]) => runCli(['--config', c.configPath, 'service', ...args], { env: env() });

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
      ProgramArguments: [process.execPath, '--max-semi-space-size=4', '--invocation-count-for-maglev=10000', '--invocation-count-for-turbofan=30000', resolve('dist/cli/main.js'), '--config', c.configPath, 'serve'],
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
    // A checkout (or Node) under /tmp is one the unit could never see: the dry run says the install would refuse.
    expect(r.status, r.stderr).toBe(installInTmp ? 1 : 0);
    if (installInTmp) expect(r.stderr).toContain('# warning: the install would refuse: the systemd unit runs with PrivateTmp=yes');
    expect(r.stderr).toContain(`# would write ${home}/xdg/systemd/user/a2a-mailbridge.service`);
    expect(r.stderr).toContain('# then load it with: systemctl --user daemon-reload && systemctl --user enable --now a2a-mailbridge.service');
    expect(r.stdout).toContain(`ExecStart=${process.execPath} --max-semi-space-size=4 --invocation-count-for-maglev=10000 --invocation-count-for-turbofan=30000 ${resolve('dist/cli/main.js')} --config ${c.configPath} serve`);
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
  it.skipIf(!built || installInTmp)('writes the unit (0644) where systemd looks, prints the command, and replaces it only with --force (runs where dist/ is built and the checkout and Node are outside /tmp, which the unit cannot see)', async () => {
    const target = join(home, 'xdg', 'systemd', 'user', 'a2a-mailbridge.service');
    const r = await install('--systemd');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(`wrote ${target}\nload it with:\n  systemctl --user daemon-reload && systemctl --user enable --now a2a-mailbridge.service\n`);
    expect(statSync(target).mode & 0o777).toBe(0o644);
    expect(readFileSync(target, 'utf8')).toContain('ProtectSystem=strict');
    const again = await install('--systemd');
    expect(again.status).toBe(1);
    expect(again.stderr).toBe(`a2a-mailbridge: refusing to overwrite ${target}; pass --force to replace it\n`);
    const dry = await install('--systemd', '--dry-run');
    expect(dry.status).toBe(1);
    expect(dry.stderr).toContain(`# warning: the install would refuse: ${target} exists; pass --force to replace it`);
    expect((await install('--systemd', '--dry-run', '--force')).status).toBe(0);
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

  it('refuses a systemd unit that could never see its config or store under /tmp, naming each path; --dry-run warns', async () => {
    const inTmp = makeConfigDir(minimalToml(), '/tmp');
    cleanup.push(inTmp.dir);
    const e = { HOME: inTmp.dir, XDG_CONFIG_HOME: join(inTmp.dir, 'xdg') };
    const r = await runCli(['--config', inTmp.configPath, 'service', 'install', '--systemd'], { env: e });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^a2a-mailbridge: refusing to write .*a2a-mailbridge\\.service: the systemd unit runs with PrivateTmp=yes and PrivateDevices=yes, so it gets empty private /tmp, /var/tmp and /dev/shm and can never see `));
    for (const [p, what] of [[inTmp.configPath, 'the config'], [join(inTmp.dir, 'state'), "store.path's folder"], [join(inTmp.dir, 'bearer'), 'server.bearer_file'], [join(inTmp.dir, 'Maildir'), 'mailbox.maildir.path']]) {
      expect(r.stderr).toContain(`${p} (${what})`);
    }
    expect(existsSync(join(inTmp.dir, 'xdg'))).toBe(false);
    const dry = await runCli(['--config', inTmp.configPath, 'service', 'install', '--systemd', '--dry-run'], { env: e });
    expect(dry.status).toBe(1);
    expect(dry.stderr).toContain(`# warning: the install would refuse: the systemd unit runs with PrivateTmp=yes`);
    // launchd has no private /tmp: no refusal there.
    expect((await runCli(['--config', inTmp.configPath, 'service', 'install', '--launchd', '--dry-run'], { env: e })).stderr).not.toContain('warning');
  });
});

describe('service status and uninstall', () => {
  it.skipIf(!built || installInTmp)('status tells installed, up to date, enabled, the manager, and whether the bridge answers; uninstall removes the file (runs where dist/ is built and the checkout and Node are outside /tmp)', async () => {
    const target = join(home, 'xdg', 'systemd', 'user', 'a2a-mailbridge.service');
    rmSync(target, { force: true });
    const none = await service('status', '--systemd');
    expect(none.status).toBe(1);
    expect(none.stdout).toContain(`service file  not installed (would be ${target}; run: a2a-mailbridge --config ${c.configPath} service install)`);

    expect((await install('--systemd')).status).toBe(0);
    const s = await service('status', '--systemd');
    expect(s.status).toBe(1); // installed, but no bridge answers
    expect(s.stdout.split('\n')).toEqual([
      `service file  ${target}`,
      'up to date    yes',
      'enabled       no',
      'systemctl     systemctl is not on PATH',
      `bridge        http://127.0.0.1:0/health: not answering (server.listen has port 0 (a new port at each start), and no serve holds this config's store ${join(c.dir, 'state', 'bridge.sqlite')})`,
      '',
    ]);
    writeFileSync(target, readFileSync(target, 'utf8').replace('RestartSec=10', 'RestartSec=11'));
    const j = JSON.parse((await service('status', '--systemd', '--json')).stdout) as unknown;
    expect(j).toMatchObject({ kind: 'systemd', file: target, installed: true, upToDate: false, enabled: false, answering: false });

    const dry = await service('uninstall', '--systemd', '--dry-run');
    expect(dry.stdout).toBe(`would run: systemctl --user disable --now a2a-mailbridge.service\nwould remove: ${target}\nwould run: systemctl --user daemon-reload\n`);
    expect(existsSync(target)).toBe(true);
    const u = await service('uninstall', '--systemd');
    expect(u.status, u.stderr).toBe(0);
    expect(u.stdout).toBe(
      [
        'systemctl is not on PATH: not stopped here; if it runs, stop it with: systemctl --user disable --now a2a-mailbridge.service',
        `removed ${target}`,
        'systemctl --user daemon-reload: systemctl is not on PATH',
        'the config, the store and the logs are kept',
        '',
      ].join('\n'),
    );
    expect(existsSync(target)).toBe(false);
    expect(existsSync(c.configPath)).toBe(true);
    const again = await service('uninstall', '--systemd');
    expect([again.status, again.stdout]).toEqual([0, `no systemd service file at ${target}; nothing to uninstall\n`]);
  });

  it('status names what would stop service install (a path the unit cannot see, a missing secret, an unsafe path) instead of suggesting an install that would refuse', async () => {
    const statusOf = async (dir: ConfigDir, kind: '--systemd' | '--launchd') => {
      const e = { HOME: dir.dir, XDG_CONFIG_HOME: join(dir.dir, 'xdg'), PATH: join(dir.dir, 'no-bin') };
      const text = await runCli(['--config', dir.configPath, 'service', 'status', kind], { env: e });
      const json = JSON.parse((await runCli(['--config', dir.configPath, 'service', 'status', kind, '--json'], { env: e })).stdout) as { installed: boolean; installRefusal: string | null };
      const install = await runCli(['--config', dir.configPath, 'service', 'install', kind, '--dry-run'], { env: e });
      return { text, json, install, file: join(dir.dir, 'xdg', 'systemd', 'user', 'a2a-mailbridge.service') };
    };
    // under /tmp: the systemd unit could never see the config; status says so, as install does
    const inTmp = makeConfigDir(minimalToml(), '/tmp');
    cleanup.push(inTmp.dir);
    const t = await statusOf(inTmp, '--systemd');
    expect(t.install.status).toBe(1);
    expect(t.text.status).toBe(1);
    expect(t.text.stdout).toContain(`service file  not installed (would be ${t.file}; service install would refuse: the systemd unit runs with PrivateTmp=yes and PrivateDevices=yes`);
    expect(t.text.stdout).toContain(`${inTmp.configPath} (the config)`);
    expect(t.text.stdout).not.toContain('run: a2a-mailbridge');
    expect(t.json).toMatchObject({ installed: false, installRefusal: expect.stringContaining('PrivateTmp=yes') as unknown });
    // installed by hand, then stale: the --force it would suggest refuses too
    mkdirSync(dirname(t.file), { recursive: true });
    writeFileSync(t.file, '[Unit]\n');
    const stale = await statusOf(inTmp, '--systemd');
    expect(stale.text.stdout).toContain(`up to date    no, and \`a2a-mailbridge --config ${inTmp.configPath} service install --force\` would refuse: the systemd unit runs with PrivateTmp=yes`);
    expect(stale.text.stdout).not.toContain('would write now');

    // a secret file that is missing: status loads without secrets, install with them
    const noBearer = makeConfigDir(minimalToml(), resolve('tmp'));
    cleanup.push(noBearer.dir);
    rmSync(join(noBearer.dir, 'bearer'));
    const b = await statusOf(noBearer, '--launchd');
    expect(b.install.status).toBe(2);
    expect(b.install.stderr).toMatch(/config key server\.bearer_file: /);
    expect(b.text.stdout).toMatch(/^service file {2}not installed \(would be \S+; service install would refuse: config key server\.bearer_file: /);
    expect(b.text.stdout).not.toContain('run: a2a-mailbridge');

    // a path with a space, which a unit file cannot hold literally
    const spaced = resolve('tmp', 'with space');
    mkdirSync(spaced, { recursive: true });
    cleanup.push(spaced);
    const sp = makeConfigDir(minimalToml(), spaced);
    const s = await statusOf(sp, '--systemd');
    // like every other refusal: the unit on stdout, the warning on stderr, exit 1
    expect(s.install.status).toBe(1);
    expect(s.install.stdout).toContain(`--config ${sp.configPath} serve\n`);
    expect(s.install.stderr).toContain(`# warning: the install would refuse: the path ${JSON.stringify(sp.configPath)} has a space, quote, backslash or $`);
    expect(s.text.stdout).toContain('service install would refuse: the path ');
    expect(s.json.installRefusal).toContain('has a space, quote, backslash or $');
  });

  it('status says the bridge answers when one runs on server.listen', async () => {
    const port = await freePort();
    const up = makeConfigDir(minimalToml({ listen: `127.0.0.1:${port}` }), resolve('tmp'));
    cleanup.push(up.dir);
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(up.dir, 'Maildir', sub), { recursive: true });
    const app = await startApp(loadConfig(up.configPath), { log: createLogger('silent') });
    try {
      const r = await runCli(['--config', up.configPath, 'service', 'status', '--systemd', '--json'], { env: env() });
      const j = JSON.parse(r.stdout) as unknown;
      expect(j).toMatchObject({ answering: true, serviceProcess: null, health: `http://127.0.0.1:${port}/health: ok (version ${VERSION})` });
      // A systemctl that answers, whose unit runs no process: the bridge answering was started by hand.
      const bin = join(up.dir, 'fake-bin');
      mkdirSync(bin);
      writeFileSync(join(bin, 'systemctl'), '#!/bin/sh\ncase "$2" in show) echo 0 ;; *) echo inactive; exit 3 ;; esac\n', { mode: 0o755 });
      const byHand = await runCli(['--config', up.configPath, 'service', 'status', '--systemd'], { env: { ...env(), PATH: bin } });
      expect(byHand.status).toBe(1);
      expect(byHand.stdout).toContain(
        `bridge        http://127.0.0.1:${port}/health: ok (version ${VERSION}), but not the service's process: pid ${process.pid} was started otherwise (by hand?) and the service runs none; no service is installed, so it is the one serving this config\n`,
      );
      // Another config on the same address (another store): that bridge is not this config's service.
      const other = makeConfigDir(minimalToml({ listen: `127.0.0.1:${port}` }), resolve('tmp'));
      cleanup.push(other.dir);
      const o = await runCli(['--config', other.configPath, 'service', 'status', '--systemd', '--json'], { env: env() });
      expect(JSON.parse(o.stdout)).toMatchObject({
        answering: false,
        health: `http://127.0.0.1:${port}/health: ok (version ${VERSION}), but NOT this config's bridge: it serves another store than ${join(other.dir, 'state', 'bridge.sqlite')} or has another server.bearer`,
      });
    } finally {
      await app.close();
    }
  });
});
