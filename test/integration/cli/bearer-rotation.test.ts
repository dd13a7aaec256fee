import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { checkListen } from '../../../src/cli/doctor-listen.js';
import { runStop, STOP_EXIT } from '../../../src/cli/stop.js';
import { runsServe } from '../../../src/cli/serve-process.js';
import { loadConfig } from '../../../src/config/config.js';
import { runCli } from '../../helpers/cli.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';
import { freePort } from '../../helpers/free-port.js';
import { killAll, startBridgeProcess } from '../faults/bridge-process.js';

/**
 * The README's bearer rotation (`secret new bearer --force`, then `stop` and `serve`) against a
 * real `serve`: the running bridge no longer names its store to the new bearer, yet the claim of
 * its store (its note names this config file and this address) tells it is this config's, so
 * status, doctor and stop say so, and stop stops it by the noted pid (src/cli/health-probe.ts
 * `ClaimView`). A bearer file gone is the same case.
 */
const dirs: ConfigDir[] = [];
async function configDir(): Promise<ConfigDir & { listen: string; env: NodeJS.ProcessEnv }> {
  const listen = `127.0.0.1:${await freePort()}`;
  const c = makeConfigDir(minimalToml({ listen, webhookUrl: 'http://127.0.0.1:1/hook' }));
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
  dirs.push(c);
  // No service installed (its file would be under XDG_CONFIG_HOME), and a systemctl that runs none.
  const bin = join(c.dir, 'fake-bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'systemctl'), '#!/bin/sh\necho 0\n');
  chmodSync(join(bin, 'systemctl'), 0o755);
  return { ...c, listen, env: { PATH: `${bin}:${process.env.PATH ?? ''}`, XDG_CONFIG_HOME: join(c.dir, 'xdg') } };
}
afterEach(killAll);
afterAll(() => {
  for (const c of dirs) rmSync(c.dir, { recursive: true, force: true });
});

describe("this config's bridge after its bearer was replaced", () => {
  it('status exits 0 naming the pid and the restart, service status and doctor say outdated bearer, stop stops it by the claim (exit 0)', async () => {
    const c = await configDir();
    const bridge = await startBridgeProcess(c.configPath);
    const pid = bridge.child.pid!;
    const rotated = await runCli(['--config', c.configPath, 'secret', 'new', 'bearer', '--force'], { env: c.env });
    expect(rotated.status, rotated.stderr).toBe(0);

    const status = await runCli(['--config', c.configPath, 'status'], { env: c.env });
    expect(status.status, status.stdout).toBe(0);
    expect(status.stdout).toContain(
      `bridge    running at http://${c.listen} (pid ${pid}, by the claim of ${join(c.dir, 'state', 'bridge.sqlite')}) with an older server.bearer: the bearer was replaced since it started, and callers with the new one are refused; restart it: a2a-mailbridge --config ${c.configPath} stop, then a2a-mailbridge --config ${c.configPath} serve\n`,
    );
    expect(status.stdout).not.toContain('systemctl');
    const service = await runCli(['--config', c.configPath, 'service', 'status'], { env: c.env });
    expect(service.stdout).toContain(`this config's bridge (pid ${pid}, by the claim of its store) running with a server.bearer replaced since it started: restart it`);
    expect(service.stdout).not.toContain("NOT this config's bridge");

    const listen = await checkListen(loadConfig(c.configPath, { skipSecrets: true }));
    expect(listen.status).toBe('warn');
    expect(listen.detail).toContain(`is taken by this config's bridge (pid ${pid}`);
    expect(listen.detail).toContain('running with an outdated server.bearer');

    const stop = await runCli(['--config', c.configPath, 'stop'], { env: c.env });
    expect(stop.status, stop.stderr).toBe(0);
    expect(stop.stdout).toBe(
      `stopped this config's bridge (pid ${pid}) at http://${c.listen}; it was running with a server.bearer replaced since it started; start it again with: a2a-mailbridge --config ${c.configPath} serve\n`,
    );
    expect(await bridge.exited).toEqual({ code: 0, signal: null });
  });

  it('a bearer file gone: status exits 0 saying it cannot be read, and stop still stops the bridge by its claim', async () => {
    const c = await configDir();
    const bridge = await startBridgeProcess(c.configPath);
    const pid = bridge.child.pid!;
    rmSync(join(c.dir, 'bearer'));
    const status = await runCli(['--config', c.configPath, 'status'], { env: c.env });
    expect(status.status, status.stdout).toBe(0);
    expect(status.stdout).toContain(`bridge    running at http://${c.listen} (pid ${pid}, by the claim of ${join(c.dir, 'state', 'bridge.sqlite')}), but this config's server.bearer cannot be read now (`);
    const stop = await runCli(['--config', c.configPath, 'stop'], { env: c.env });
    expect(stop.status, stop.stderr).toBe(0);
    expect(stop.stdout).toContain(`stopped this config's bridge (pid ${pid}) at http://${c.listen}; its server.bearer cannot be read now (`);
    expect(await bridge.exited).toEqual({ code: 0, signal: null });
  });

  it('stop signals nothing when the noted pid is not a2a-mailbridge serve by its command line (exit 4)', async () => {
    const c = await configDir();
    const bridge = await startBridgeProcess(c.configPath);
    const pid = bridge.child.pid!;
    writeFileSync(join(c.dir, 'bearer'), 'another-bearer-0123456789abcdef\n', { mode: 0o600 });
    // A /proc where the noted pid runs something else (a pid the kernel gave to another process).
    const proc = join(c.dir, 'proc');
    mkdirSync(join(proc, String(pid)), { recursive: true });
    writeFileSync(join(proc, String(pid), 'cmdline'), ['/usr/bin/python3', 'server.py', 'serve', ''].join('\0'));
    expect(runsServe(pid, proc)).toBe(false);
    expect(runsServe(pid)).toBe(process.platform === 'linux' ? true : null);
    const kill = vi.fn();
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    let code: number;
    let printed: string;
    try {
      code = await runStop(c.configPath, { kind: 'launchd', procRoot: proc, kill });
    } finally {
      printed = err.mock.calls.map(([chunk]) => String(chunk)).join('');
      err.mockRestore();
    }
    expect(code).toBe(STOP_EXIT.unknown);
    expect(printed).toContain(`noted pid ${pid}, but that process is not a2a-mailbridge serve`);
    expect(kill).not.toHaveBeenCalled();
    expect(bridge.child.exitCode).toBeNull();
    await bridge.stop();
  });
});
