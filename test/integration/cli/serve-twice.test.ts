import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';
import { freePort } from '../../helpers/free-port.js';
import { killAll, startBridgeProcess } from '../faults/bridge-process.js';

/**
 * `serve` while a serve already holds this config's store at this address (src/app.ts
 * `refuseHeldStore`): this config's own bridge is named as already running, with its pid and the
 * stop command, before the listen probe would say "already in use"; another config file on that
 * store and address gets the claim's refusal, which names that serve.
 */
const dirs: ConfigDir[] = [];
async function configDir(listen?: string): Promise<ConfigDir & { listen: string }> {
  const at = listen ?? `127.0.0.1:${await freePort()}`;
  const c = makeConfigDir(minimalToml({ listen: at, webhookUrl: 'http://127.0.0.1:1/hook' }));
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
  dirs.push(c);
  return { ...c, listen: at };
}
afterEach(killAll);
afterAll(() => {
  for (const c of dirs) rmSync(c.dir, { recursive: true, force: true });
});

describe('serve a second time', () => {
  it("with the same config: says this config's bridge is already running (pid, address, stop command), exit 2; the first keeps running", async () => {
    const c = await configDir();
    const bridge = await startBridgeProcess(c.configPath);
    const pid = bridge.child.pid!;
    const again = await runCli(['--config', c.configPath, 'serve']);
    expect(again.status, again.stderr).toBe(2);
    expect(again.stderr).toBe(`a2a-mailbridge: this config's bridge is already running (pid ${pid}, listening at ${c.listen}); stop it first: a2a-mailbridge --config ${c.configPath} stop, or leave it running\n`);
    expect(again.stderr).not.toContain('already in use');

    // Another config file naming the same store and address: the claim's refusal, naming the running serve.
    const other = await configDir(c.listen);
    writeFileSync(other.configPath, readFileSync(other.configPath, 'utf8').replace('path = "state/bridge.sqlite"', `path = "${join(c.dir, 'state', 'bridge.sqlite')}"`));
    const second = await runCli(['--config', other.configPath, 'serve']);
    expect(second.status, second.stderr).toBe(2);
    expect(second.stderr).toContain(`is in use by another a2a-mailbridge serve (pid ${pid}, listening at ${c.listen}, started with the config ${c.configPath})`);
    expect(bridge.child.exitCode).toBeNull();
    await bridge.stop();
  });

  it('with another config (its own store) on the same address: says a bridge of another config holds it and names the file whose server.listen to change, no stop command; exit 2', async () => {
    const c = await configDir();
    const bridge = await startBridgeProcess(c.configPath);
    const other = await configDir(c.listen);
    const r = await runCli(['--config', other.configPath, 'serve']);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toBe(
      `a2a-mailbridge: ${c.listen} is already in use by a bridge of another config (its /health names another store, or none to this config's server.bearer): stop it, or change server.listen in ${other.configPath} to a free port\n`,
    );
    expect(bridge.child.exitCode).toBeNull();
    await bridge.stop();
  });
});
