import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { notRunningLine, runStop, STOP_EXIT } from '../../../src/cli/stop.js';
import { runCli } from '../../helpers/cli.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';
import { freePort } from '../../helpers/free-port.js';
import { killAll, startBridgeProcess } from '../faults/bridge-process.js';

/** `a2a-mailbridge stop` against a real `serve` process. */
const dirs: ConfigDir[] = [];
async function configDir(at?: string): Promise<ConfigDir & { listen: string }> {
  const listen = at ?? `127.0.0.1:${await freePort()}`;
  const c = makeConfigDir(minimalToml({ listen, webhookUrl: 'http://127.0.0.1:1/hook' }));
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
  dirs.push(c);
  return { ...c, listen };
}
afterEach(killAll);
afterAll(() => {
  for (const c of dirs) rmSync(c.dir, { recursive: true, force: true });
});

/** A PATH whose `systemctl` answers `show -p MainPID --value` with `pid`, as systemd does for the unit it runs. */
function fakeSystemctl(dir: string, pid: number): string {
  const bin = join(dir, 'fake-bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'systemctl'), `#!/bin/sh\necho ${pid}\n`);
  chmodSync(join(bin, 'systemctl'), 0o755);
  return `${bin}:${process.env.PATH ?? ''}`;
}

describe('a2a-mailbridge stop', () => {
  it("sends SIGTERM to this config's bridge, waits until the process has exited, and exits 0; then says it is not running (exit 3)", async () => {
    const c = await configDir();
    const bridge = await startBridgeProcess(c.configPath);
    const pid = bridge.child.pid!;
    const r = await runCli(['--config', c.configPath, 'stop'], { env: { PATH: fakeSystemctl(c.dir, 0) } });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(`stopped this config's bridge (pid ${pid}) at http://${c.listen}; start it again with: a2a-mailbridge --config ${c.configPath} serve\n`);
    // serve's own SIGTERM path: a clean exit 0, after its "stopping" line.
    expect(await bridge.exited).toEqual({ code: 0, signal: null });
    expect(bridge.lines.some((l) => l.includes('"signal":"SIGTERM"'))).toBe(true);

    const again = await runCli(['--config', c.configPath, 'stop']);
    expect(again.status, again.stderr).toBe(3);
    expect(again.stdout).toBe(notRunningLine(`nothing answers at http://${c.listen}: ECONNREFUSED`));
    expect(again.stdout).toMatch(/^this config's bridge is not running \(nothing answers at http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED\); nothing to stop\n$/);
  });

  it("with server.listen port 0, stops this config's bridge at the port its store's claim notes; then no serve holds the claim: not running (exit 3)", async () => {
    const c = await configDir('127.0.0.1:0');
    const bridge = await startBridgeProcess(c.configPath);
    // serve prints its summary once startApp has returned, after the claim's note names the bound port.
    await bridge.line((l) => l.endsWith(' is serving'));
    const at = String((await bridge.log('a2a-mailbridge listening')).url).replace(/\/$/, '');
    expect(at).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
    const pid = bridge.child.pid!;
    const r = await runCli(['--config', c.configPath, 'stop'], { env: { PATH: fakeSystemctl(c.dir, 0) } });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(`stopped this config's bridge (pid ${pid}) at ${at}; start it again with: a2a-mailbridge --config ${c.configPath} serve\n`);
    expect(await bridge.exited).toEqual({ code: 0, signal: null });

    const again = await runCli(['--config', c.configPath, 'stop']);
    expect(again.status, again.stderr).toBe(3);
    expect(again.stdout).toBe(notRunningLine(`no serve holds its store ${join(c.dir, 'state', 'bridge.sqlite')}`));
  });

  it('says "not running; nothing to stop" the same way (exit 3) when the bridge /health named had exited by the signal', async () => {
    const c = await configDir();
    const bridge = await startBridgeProcess(c.configPath);
    const pid = bridge.child.pid!;
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    let code: number;
    let printed: string[];
    let signalled: number | undefined;
    try {
      // launchctl is not on this PATH: no service manager runs the bridge. The seam stands for a
      // process gone between /health and the signal, as process.kill reports it.
      code = await runStop(c.configPath, {
        kind: 'launchd',
        kill: (p) => {
          signalled = p;
          throw Object.assign(new Error('kill ESRCH'), { code: 'ESRCH' });
        },
      });
    } finally {
      printed = out.mock.calls.map(([chunk]) => String(chunk));
      out.mockRestore();
    }
    expect(signalled).toBe(pid);
    expect(code).toBe(STOP_EXIT.notRunning);
    expect(printed).toEqual([notRunningLine(`its process, pid ${pid}, had exited before the signal`)]);
    expect(printed[0]).toMatch(/^this config's bridge is not running \(.*\); nothing to stop\n$/);
    await bridge.stop();
  });

  it("says a config whose store no serve holds is not running (exit 3), and refuses to stop another config's bridge on its store and address (exit 1); both leave it running", async () => {
    const a = await configDir();
    const bridge = await startBridgeProcess(a.configPath);
    const listen = a.listen;
    const b = await configDir(listen);
    const r = await runCli(['--config', b.configPath, 'stop']);
    expect(r.status, r.stderr).toBe(3);
    expect(r.stdout).toBe(notRunningLine(`no serve holds its store ${join(b.dir, 'state', 'bridge.sqlite')}; http://${listen} is taken by another program`));
    // Another config file on A's store and address, with another bearer: the claim is held, but its note names A's config.
    const same = await configDir(listen);
    writeFileSync(same.configPath, readFileSync(same.configPath, 'utf8').replace('path = "state/bridge.sqlite"', `path = "${join(a.dir, 'state', 'bridge.sqlite')}"`));
    writeFileSync(join(same.dir, 'bearer'), 'another-bearer-0123456789abcdef\n', { mode: 0o600 });
    const other = await runCli(['--config', same.configPath, 'stop']);
    expect(other.status, other.stderr).toBe(1);
    expect(other.stderr).toContain(`the bridge answering at http://${listen} is not this config's: it serves another store than ${join(a.dir, 'state', 'bridge.sqlite')} or has another server.bearer`);
    expect(other.stderr).toContain('not stopped. Stop it with the config it was started with (a2a-mailbridge --config <that file> stop)');
    expect(bridge.child.exitCode).toBeNull();
    const own = await runCli(['--config', a.configPath, 'stop'], { env: { PATH: fakeSystemctl(a.dir, 0) } });
    expect(own.status, own.stderr).toBe(0);
    await bridge.exited;
  });

  it('names the service manager\'s command when the bridge is the systemd service\'s main process, and sends no signal (exit 1)', async () => {
    const c = await configDir();
    const bridge = await startBridgeProcess(c.configPath);
    const pid = bridge.child.pid!;
    const r = await runCli(['--config', c.configPath, 'stop'], { env: { PATH: fakeSystemctl(c.dir, pid) } });
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toBe(`a2a-mailbridge: this config's bridge (pid ${pid}) runs as the systemd service, which would start it again: stop it with: systemctl --user stop a2a-mailbridge.service\n`);
    expect(bridge.child.exitCode).toBeNull();
    // The pid goes only to a request that presents the bearer, like the store fingerprint.
    const anonymous = (await (await fetch(`http://${c.listen}/health`)).json()) as { pid: unknown };
    const holder = (await (await fetch(`http://${c.listen}/health`, { headers: { authorization: `Bearer ${c.bearer}` } })).json()) as { pid: unknown };
    expect([anonymous.pid, holder.pid]).toEqual([null, pid]);
  });
});
