import { createServer, type Server } from 'node:http';
import { mkdirSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { notHealthWhy, probeHealth } from '../../../src/cli/health-probe.js';
import { notRunningLine } from '../../../src/cli/stop.js';
import { loadConfig } from '../../../src/config/config.js';
import { runCli } from '../../helpers/cli.js';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';

/**
 * server.listen held by another program (not a bridge) while no serve holds this config's store:
 * `status` and `stop` say this config's bridge is not running and the address is taken (exit 3),
 * never a raw JSON parser's message (src/cli/health-probe.ts `notHealthWhy`).
 */
describe('server.listen taken by another program', () => {
  const cleanup: (() => void)[] = [];
  afterAll(() => cleanup.forEach((f) => f()));

  async function taken(status: number, body: string): Promise<{ configPath: string; at: string; store: string }> {
    const program: Server = createServer((_req, res) => {
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(body);
    });
    await new Promise<void>((r) => program.listen(0, '127.0.0.1', r));
    cleanup.push(() => program.close());
    const port = (program.address() as AddressInfo).port;
    const c = makeConfigDir(minimalToml({ listen: `127.0.0.1:${port}`, webhookUrl: 'http://127.0.0.1:1/hook' }));
    cleanup.push(() => rmSync(c.dir, { recursive: true, force: true }));
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
    return { configPath: c.configPath, at: `http://127.0.0.1:${port}`, store: join(c.dir, 'state', 'bridge.sqlite') };
  }

  it.each([
    [404, 'Not Found', 'HTTP 404'],
    [202, '', 'HTTP 202, not a JSON object'],
  ])('answering HTTP %i: status and stop say not running, the address taken (exit 3)', async (code, body, what) => {
    const c = await taken(code, body);
    // In this process, with time to answer on a loaded machine: what the probe makes of the answer.
    const probe = await probeHealth(loadConfig(c.configPath, { skipSecrets: true }), 30_000);
    expect(probe).toMatchObject({ up: false, why: notHealthWhy(what), answered: true, claimed: false, ownServe: null });
    expect(notHealthWhy(what)).toBe(`answers with something that is not an a2a-mailbridge /health (${what})`);
    const status = await runCli(['--config', c.configPath, 'status']);
    expect(status.status, status.stderr).toBe(3);
    // status waits 1.5 s for /health: on a loaded machine the line may name that wait instead of the answer.
    expect(status.stdout).toMatch(
      new RegExp(`\\nbridge {4}not running; ${c.at.replace(/\./g, '\\.')} is taken by another program \\(it (answers with something that is not an a2a-mailbridge /health \\(${what.replace(/[(),]/g, '\\$&')}\\)|does not answer as a bridge: no answer within 5000 ms)\\): free it or change server\\.listen in `),
    );
    const stop = await runCli(['--config', c.configPath, 'stop']);
    expect(stop.status, stop.stderr).toBe(3);
    expect(stop.stdout).toBe(notRunningLine(`no serve holds its store ${c.store}; ${c.at} is taken by another program`));
    for (const out of [status.stdout, status.stderr, stop.stdout, stop.stderr]) expect(out).not.toMatch(/JSON input|Unexpected/);
  });
});
