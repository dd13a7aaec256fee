import { existsSync, mkdirSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { StatusReport } from '../../../src/cli/status.js';
import { runCli } from '../../helpers/cli.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';
import { freePort } from '../../helpers/free-port.js';
import { killAll, startBridgeProcess } from '../faults/bridge-process.js';

/**
 * A running bridge whose whole state/ folder (the store and its claim lock) was moved away (trial):
 * `status` and `stop` found no claim at store.path and called the bridge "another program". They
 * now find it by its listening socket (this user's) and its /health's store fingerprint, and `stop`
 * signals the pid /health names once that process holds the socket and runs serve.
 */
const dirs: ConfigDir[] = [];
function configDir(listen: string): ConfigDir {
  const c = makeConfigDir(minimalToml({ listen, webhookUrl: 'http://127.0.0.1:1/hook' }));
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
  dirs.push(c);
  return c;
}
afterEach(killAll);
afterAll(() => {
  for (const c of dirs) rmSync(c.dir, { recursive: true, force: true });
});

describe('stop and status with the store folder moved away under a running bridge', () => {
  it('status says it runs (exit 0), stop stops it by the pid /health names (exit 0)', async () => {
    const listen = `127.0.0.1:${await freePort()}`;
    const c = configDir(listen);
    const bridge = await startBridgeProcess(c.configPath);
    const pid = bridge.child.pid!;
    renameSync(join(c.dir, 'state'), join(c.dir, 'state.moved'));

    const st = await runCli(['--config', c.configPath, 'status', '--json']);
    expect(st.status, st.stderr).toBe(0);
    const report = JSON.parse(st.stdout) as StatusReport;
    const moved = join(realpathSync(c.dir), 'state.moved', 'bridge.sqlite');
    expect(report.bridge).toMatchObject({ answering: true, sameStore: true, claimed: false, taken: false, storeAway: { pid, store: moved } });
    const text = await runCli(['--config', c.configPath, 'status']);
    expect(text.stdout).toContain(`bridge    running at http://${listen} (pid ${pid}), but its store is no longer at ${join(c.dir, 'state', 'bridge.sqlite')}: it was moved to ${moved} while the bridge runs`);

    const r = await runCli(['--config', c.configPath, 'stop']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      `stopped this config's bridge (pid ${pid}) at http://${listen}; its store was at ${moved}, moved away from ${join(c.dir, 'state', 'bridge.sqlite')} while it ran: move it back before you start it again; start it again with: a2a-mailbridge --config ${c.configPath} serve\n`,
    );
    expect(await bridge.exited).toEqual({ code: 0, signal: null });
  });

  it("another config on the same address and bearer, with no store of its own: not followed to the running bridge, never sent the bearer nor signalled", async () => {
    const listen = `127.0.0.1:${await freePort()}`;
    const a = configDir(listen);
    const bridge = await startBridgeProcess(a.configPath);
    // Same bearer (the test helper's), same address, another store.path: its fingerprint differs.
    const b = configDir(listen);
    expect(existsSync(join(b.dir, 'state'))).toBe(false);
    const st = await runCli(['--config', b.configPath, 'status', '--json']);
    expect(st.status).toBe(3);
    expect((JSON.parse(st.stdout) as StatusReport).bridge).toMatchObject({ answering: true, sameStore: false, storeNamed: null, storeAway: null, taken: true });
    const r = await runCli(['--config', b.configPath, 'stop']);
    expect(r.status).toBe(3);
    expect(r.stdout).toMatch(/is not running \(no serve holds its store .*; http:\/\/127\.0\.0\.1:\d+ is taken by another program\); nothing to stop/);
    expect(bridge.child.exitCode).toBeNull();
    expect((await fetch(`http://${listen}/health`)).status).toBe(200);
  });
});
