import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdirSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';
import { storeFingerprint } from '../../../src/core/store-fingerprint.js';

/**
 * A process that took server.listen while no bridge ran (attack 2): it answers /health as a bridge
 * would, forging the store fingerprint from any bearer it is sent and naming the pid of another
 * process of the operator. status, stop and doctor must not send it the bearer, and stop must not
 * signal that pid.
 */
describe('a process squatting server.listen while no bridge runs', () => {
  const cleanup: (() => void)[] = [];
  afterAll(() => cleanup.forEach((f) => f()));

  it('is never sent the bearer, and stop signals nothing', async () => {
    const victim = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    cleanup.push(() => victim.kill('SIGKILL'));
    const seen: (string | undefined)[] = [];
    let storePath = '';
    const squatter: Server = createServer((req, res) => {
      seen.push(req.headers.authorization);
      const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
      const fingerprint = bearer ? storeFingerprint(storePath, bearer) : null;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'ok', version: '9.9\u001b]0;pwned\u0007\nok    fake line', pid: victim.pid, store: { fingerprint } }));
    });
    await new Promise<void>((r) => squatter.listen(0, '127.0.0.1', r));
    cleanup.push(() => squatter.close());
    const port = (squatter.address() as AddressInfo).port;
    const c = makeConfigDir(minimalToml({ listen: `127.0.0.1:${port}`, webhookUrl: 'http://127.0.0.1:1/hook' }));
    cleanup.push(() => rmSync(c.dir, { recursive: true, force: true }));
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
    storePath = join(c.dir, 'state', 'bridge.sqlite');

    const stop = await runCli(['--config', c.configPath, 'stop']);
    // No serve holds this config's store: not running, whatever answers there.
    expect(stop.status).toBe(3);
    expect(stop.stdout).toContain(`is taken by another program); nothing to stop`);
    expect(victim.exitCode).toBeNull();
    expect(victim.signalCode).toBeNull();
    const status = await runCli(['--config', c.configPath, 'status']);
    expect(status.status).toBe(3);
    expect(status.stdout).toContain(`bridge    not running; http://127.0.0.1:${port} is taken by another program, which answers /health as an a2a-mailbridge would`);
    expect(status.stdout).not.toContain('\u001b');
    await runCli(['--config', c.configPath, 'doctor']);
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(seen.filter((a) => a !== undefined)).toEqual([]);
    // The victim still runs: a signal sent to it would have ended it by now (stop waits for the exit it expects).
    expect(process.kill(victim.pid!, 0)).toBe(true);
  });
});
