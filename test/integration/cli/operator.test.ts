import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type App } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/config.js';
import { iso } from '../../../src/core/time.js';
import { createLogger } from '../../../src/log.js';
import { hermesBody } from '../../helpers/bridge-harness.js';
import { runCli } from '../../helpers/cli.js';
import type { RpcAnswer, V1SendResult } from '../../helpers/rpc-json.js';
import type { V1Task } from '../../../src/a2a/wire.js';
import { restartCommands, type StatusReport } from '../../../src/cli/status.js';
import type { TaskJson } from '../../../src/cli/tasks.js';
import { storeFingerprint } from '../../../src/core/store-fingerprint.js';
import { makeConfigDir, minimalToml, TEST_BEARER, writeSecret, type ConfigDir } from '../../helpers/config-dir.js';
import { freePort } from '../../helpers/free-port.js';

/**
 * The operator's first hour, on a running bridge whose webhook refuses connections:
 * what `tasks`, `retry` and `show` say about a task that is SUBMITTED and then CANCELED.
 */
let c: ConfigDir;
let app: App;
let taskId: string;
const cli = (...args: string[]) => runCli(['--config', c.configPath, ...args]);

async function rpc(method: string, params: unknown): Promise<V1Task> {
  const res = await fetch(app.server.endpoint(app.bridge.ctx.config.agents[0]!), {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}`, 'a2a-version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return ((await res.json()) as { result: V1Task }).result;
}

beforeAll(async () => {
  // Nothing listens on port 1 (tcpmux): every webhook attempt ends in ECONNREFUSED and is retried.
  // A port that was free a moment ago (freePort) could be taken by another test file's server
  // meanwhile — a CI run on Node 22 got a 4xx there and the task FAILED at once — while no
  // listen(0) is ever given a port below 1024.
  c = makeConfigDir(minimalToml({ webhookUrl: 'http://127.0.0.1:1/hook', listen: `127.0.0.1:${await freePort()}` }));
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
  app = await startApp(loadConfig(c.configPath), { log: createLogger('silent') });
  const body = hermesBody('a job for an agent that is down', 'ctx-operator');
  const res = await fetch(app.server.endpoint(app.bridge.ctx.config.agents[0]!), {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}` },
    body: JSON.stringify(body),
  });
  const task = ((await res.json()) as RpcAnswer<V1SendResult>).result!.task!;
  expect(task.status.state).toBe('TASK_STATE_SUBMITTED');
  taskId = task.id;
});
afterAll(async () => {
  await app?.close();
  if (c) rmSync(c.dir, { recursive: true, force: true });
});

describe('a SUBMITTED task whose only attempt got ECONNREFUSED', () => {
  it('tasks: WHY shows the last webhook error and the next attempt time, not "dispatch pending"', async () => {
    const next = app.bridge.ctx.store.turns.get(taskId, 1)!.nextAttemptAt!;
    const r = await cli('tasks');
    expect(r.status, r.stderr).toBe(0);
    const line = r.stdout.split('\n').find((l) => l.includes(taskId))!;
    expect(line).toMatch(/ SUBMITTED /);
    expect(line).toContain(`webhook attempt 1 failed: network error: ECONNREFUSED; next attempt ${iso(next)}`);
    expect(line).not.toContain('dispatch pending');
    const [j] = JSON.parse((await cli('tasks', '--json')).stdout) as (TaskJson & { why: string })[];
    expect(j!.why).toBe(`webhook attempt 1 failed: network error: ECONNREFUSED; next attempt ${iso(next)}`);
  });

  it('retry refuses with the real rule and says when the next automatic attempt is', async () => {
    const next = app.bridge.ctx.store.turns.get(taskId, 1)!.nextAttemptAt!;
    const r = await cli('retry', taskId.slice(0, 8));
    expect([r.status, r.stdout]).toEqual([1, '']);
    expect(r.stderr).toContain(`task ${taskId} is SUBMITTED: its webhook has not been accepted yet, and the bridge retries it by itself; attempt 1 failed: network error: ECONNREFUSED; `);
    // The first backoff is short: by the time the CLI runs, the attempt may already be due.
    const at = iso(next).replaceAll('.', '\\.');
    expect(r.stderr).toMatch(new RegExp(`the next automatic attempt \\(2 of max_attempts 8\\) is (at ${at} \\(in [^)]+\\)|due now \\(since ${at}\\))`));
    expect(r.stderr).toContain('on the first A2A call after that (mailbox.watch is off)');
    expect(r.stderr).toContain('`retry` is for a task that FAILED by dispatch (its attempts exhausted, or refused by the webhook)');
    expect(r.stderr).not.toMatch(/never accepted/);
    expect(app.bridge.ctx.store.tasks.get(taskId)!.state).toBe('SUBMITTED');
  });
});

describe('status beside a running bridge', () => {
  it('says the bridge answers and lists the webhook that is not accepted, with the command that shows it', async () => {
    const r = await cli('status');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`bridge    answering at ${app.server.baseUrl} (version `);
    expect(r.stdout).toContain('/health status ok)');
    expect(r.stdout).toContain('webhooks  1 dispatch not accepted yet:\n');
    expect(r.stdout).toMatch(new RegExp(`\\n {12}task ${taskId.slice(0, 8)} \\(grok\\) attempt \\d failed: network error: ECONNREFUSED; next \\S+Z: a2a-mailbridge --config ${c.configPath} show ${taskId.slice(0, 8)}\\n`));
    expect(r.stdout).toMatch(/\nmailbox {3}maildir, last checked \S+Z \(\d+ s ago\): ok, 0 new messages, 0 applied\n/);
  });
});

describe('status of another config whose server.listen is the same address', () => {
  it('says this config\'s bridge is not running and the address is taken by what answers /health as a bridge, and exits 3', async () => {
    // Config B: the same listen address as the running bridge's (A), another folder, so another store, which does not exist.
    const b = makeConfigDir(minimalToml({ listen: `${app.bridge.ctx.config.server.host}:${app.bridge.ctx.config.server.port}` }));
    try {
      const r = await runCli(['--config', b.configPath, 'status']);
      expect(r.status, r.stderr).toBe(3);
      // No serve holds B's store: what answers at its address is not B's bridge, and B's bearer is not sent to it.
      expect(r.stdout).toContain(
        `bridge    not running; ${app.server.baseUrl} is taken by another program, which answers /health as an a2a-mailbridge would (another config's bridge? stop it with a2a-mailbridge --config <the file it was started with> stop): free it or change server.listen in ${b.configPath}\n`,
      );
      expect(r.stdout).not.toContain('bridge    answering');
      const j = JSON.parse((await runCli(['--config', b.configPath, 'status', '--json'])).stdout) as StatusReport;
      expect(j.bridge).toMatchObject({ answering: true, sameStore: false, claimed: false, taken: true });
      // The bridge's own config: the same store.
      const own = JSON.parse((await cli('status', '--json')).stdout) as StatusReport;
      expect(own.bridge).toMatchObject({ answering: true, sameStore: true });
    } finally {
      rmSync(b.dir, { recursive: true, force: true });
    }
  });

  it('a config with another bearer is told no store at all, and exits 3 too (the fingerprint is shown to the bearer only)', async () => {
    // B: the running bridge's own store and address, with a bearer that bridge was not started with.
    const b = makeConfigDir(minimalToml({ listen: `${app.bridge.ctx.config.server.host}:${app.bridge.ctx.config.server.port}` }).replace('path = "state/bridge.sqlite"', `path = "${app.bridge.ctx.config.store.path}"`));
    try {
      writeSecret(b.dir, 'bearer', `${b.bearer}-another`);
      const r = await runCli(['--config', b.configPath, 'status']);
      expect(r.status, r.stderr).toBe(3);
      expect(r.stdout).toContain(
        `or has another server.bearer (its /health names no store to this config's server.bearer); it was started with another config, or this config's bearer (server.bearer_file) changed since that bridge started — restart it: ${restartCommands(b.configPath)};`,
      );
    } finally {
      rmSync(b.dir, { recursive: true, force: true });
    }
  });

  it("says it runs (by its store's claim) and why the bearer cannot be read, when the bearer that keys the fingerprint cannot be read (exit 0)", async () => {
    const bearerFile = join(c.dir, 'bearer');
    chmodSync(bearerFile, 0o644);
    try {
      const r = await cli('status');
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toContain(
        `bridge    running at ${app.server.baseUrl} (pid ${process.pid}, by the claim of ${join(c.dir, 'state', 'bridge.sqlite')}), but this config's server.bearer cannot be read now (server.bearer_file: secret file ${bearerFile} has mode 0644, readable by others; run: chmod 600 ${bearerFile}; the store fingerprint is keyed with it and shown only to its holder); the bridge keeps the bearer it read at its start\n`,
      );
    } finally {
      chmodSync(bearerFile, 0o600);
    }
  });

  it('/health names its store by a short fingerprint, to the bearer only: no path, nothing secret, and keyed with server.bearer', async () => {
    const fingerprintFor = async (authorization?: string): Promise<unknown> =>
      ((await (await fetch(`${app.server.baseUrl}/health`, { headers: authorization ? { authorization } : {} })).json()) as { store: { fingerprint: unknown } }).store.fingerprint;
    // Keyed with the bearer, it would be an offline test of guessed bearers: none to a request without it, or with another.
    expect(await fingerprintFor()).toBeNull();
    expect(await fingerprintFor(`Bearer ${app.bridge.ctx.config.server.bearer}x`)).toBeNull();
    const text = await (await fetch(`${app.server.baseUrl}/health`, { headers: { authorization: `Bearer ${app.bridge.ctx.config.server.bearer}` } })).text();
    const h = JSON.parse(text) as { store: { fingerprint: string } };
    expect(h.store.fingerprint).toMatch(/^[0-9a-f]{16}$/);
    expect(h.store.fingerprint).toBe(storeFingerprint(app.bridge.ctx.config.store.path, app.bridge.ctx.config.server.bearer));
    expect(h.store.fingerprint).not.toBe(storeFingerprint(app.bridge.ctx.config.store.path, `${app.bridge.ctx.config.server.bearer}x`));
    expect(text).not.toContain(c.dir);
    expect(text).not.toContain('bridge.sqlite');
  });
});

describe('show on a terminal task', () => {
  it('stops counting "so far" once the task is CANCELED, and the header names the turn\'s deadline', async () => {
    const canceled = await rpc('CancelTask', { id: taskId });
    expect(canceled.status.state).toBe('TASK_STATE_CANCELED');
    const turn = app.bridge.ctx.store.turns.get(taskId, 1)!;
    const r = await cli('show', taskId);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`deadline ${iso(turn.deadlineAt)} \\(turn 1's; no longer applies: the task is CANCELED\\)\\n`));
    expect(r.stdout).not.toContain('deadline -');
    expect(r.stdout).not.toContain('so far');
    expect(r.stdout).toMatch(/dispatch → webhook accepted\s+never \(CANCELED \d/);
    expect(r.stdout).toMatch(/dispatch → promoted\s+never \(CANCELED \d/);
  });
});
