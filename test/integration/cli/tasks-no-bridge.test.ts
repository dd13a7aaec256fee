import { mkdirSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { startApp } from '../../../src/app.js';
import { runTasks } from '../../../src/cli/tasks.js';
import { loadConfig } from '../../../src/config/config.js';
import { iso } from '../../../src/core/time.js';
import { createLogger } from '../../../src/log.js';
import { hermesBody } from '../../helpers/bridge-harness.js';
import { makeConfigDir, minimalToml, TEST_BEARER } from '../../helpers/config-dir.js';
import { freePort } from '../../helpers/free-port.js';
import type { RpcAnswer, V1SendResult } from '../../helpers/rpc-json.js';

/** `tasks` run in this process at an injected time, its stdout caught. */
function tasksAt(configFile: string, now: number, json = false): string {
  let out = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  try {
    expect(runTasks({ configFile }, json ? { json: true } : {}, now)).toBe(0);
  } finally {
    spy.mockRestore();
  }
  return out;
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('tasks: a webhook attempt due in the past', () => {
  // Port 0 (a new port at each start): no address to ask, the store's claim tells (it told nothing before).
  it.each([
    ['a fixed port', async () => `127.0.0.1:${await freePort()}`],
    ['port 0', () => Promise.resolve('127.0.0.1:0')],
  ])('is marked "no bridge running" once this config\'s bridge has stopped, and only then (server.listen with %s)', async (_what, listen) => {
    // Nothing listens on port 1: the first attempt fails with ECONNREFUSED and a next one is scheduled.
    const c = makeConfigDir(minimalToml({ webhookUrl: 'http://127.0.0.1:1/hook', listen: await listen() }));
    dirs.push(c.dir);
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
    const config = loadConfig(c.configPath);
    const app = await startApp(config, { log: createLogger('silent') });
    // A request of its own connection (no keep-alive pool): the first /health probe after the
    // bridge stopped must meet a closed port, not a pooled socket the server just closed.
    const taskId = await new Promise<string>((resolve, reject) => {
      const req = request(app.server.endpoint(config.agents[0]!), { method: 'POST', agent: false, headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}` } }, (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString('utf8')));
        res.on('end', () => resolve((JSON.parse(text) as RpcAnswer<V1SendResult>).result!.task!.id));
      });
      req.on('error', reject);
      req.end(JSON.stringify(hermesBody('a job for an agent that is down', 'ctx-stalled')));
    });
    const next = app.bridge.ctx.store.turns.get(taskId, 1)!.nextAttemptAt!;
    await app.close();
    const line = (text: string): string => text.split('\n').find((l) => l.includes(taskId))!;
    expect(line(tasksAt(c.configPath, next + 60_000))).toContain('ctx-stalled  no bridge running; webhook attempt 1 failed: network error: ECONNREFUSED; next attempt');
    const [j] = JSON.parse(tasksAt(c.configPath, next + 60_000, true)) as { why: string }[];
    expect(j!.why).toBe(`no bridge running; webhook attempt 1 failed: network error: ECONNREFUSED; next attempt ${iso(next)}`);
    // Not yet due: no mark.
    expect(line(tasksAt(c.configPath, next - 1))).toContain(`ctx-stalled  webhook attempt 1 failed: network error: ECONNREFUSED; next attempt ${iso(next)}`);
    // The bridge runs again: a past time is its to catch up on, no mark.
    const again = await startApp(loadConfig(c.configPath), { log: createLogger('silent') });
    try {
      expect(line(tasksAt(c.configPath, Date.now() + 86_400_000))).not.toContain('no bridge running');
    } finally {
      await again.close();
    }
  });
});
