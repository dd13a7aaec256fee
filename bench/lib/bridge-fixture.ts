/**
 * A bridge in a child process, set up and started the way a user runs it: `a2a-mailbridge serve`
 * (src/ compiled by bench/lib/build.ts) with a config file and 0600 secret files, a SQLite store,
 * a Maildir mailbox (empty: the A2A benchmarks must not check a mailbox) with
 * `check_interval_s = 3600`, logging at info (to a discarded stderr), and a webhook receiver on
 * loopback (in this process) that verifies and accepts the dispatch, so tasks reach WORKING
 * through the real path.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { dirname, join } from 'node:path';
import { makeConfigDir, TEST_BEARER, TEST_WEBHOOK_BEARER, TEST_WEBHOOK_SECRET, type ConfigDir } from '../../test/helpers/config-dir.js';
import { freePort } from '../../test/helpers/free-port.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../test/helpers/webhook-receiver.js';
import { buildBridge } from './build.js';
import { cpuMsOf } from './child.js';
import { AGENT } from './mail-fixture.js';
import type { V1SendResult } from '../../test/helpers/rpc-json.js';

export const BEARER = TEST_BEARER;

/** The headers Hermes sends on every JSON-RPC call (Hermes Agent, plugins/platforms/a2a/tools.py). */
export function rpcHeaders(): Record<string, string> {
  return { 'content-type': 'application/json', authorization: `Bearer ${BEARER}`, 'a2a-version': '1.0' };
}

export function hex(n: number): string {
  return randomBytes(n).toString('hex');
}

/** A SendMessage body as Hermes sends it. `messageId` may be autocannon's `[<id>]` placeholder. */
export function sendBody(text: string, contextId: string, messageId = hex(16), metadata?: Record<string, unknown>): string {
  const message: Record<string, unknown> = { role: 'ROLE_USER', parts: [{ text, mediaType: 'text/plain' }], messageId, contextId };
  if (metadata) message.metadata = metadata;
  return JSON.stringify({ jsonrpc: '2.0', id: `task-${hex(8)}`, method: 'SendMessage', params: { message } });
}

export function getTaskBody(id: string): string {
  return JSON.stringify({ jsonrpc: '2.0', id: `task-${hex(8)}`, method: 'GetTask', params: { id } });
}

/**
 * POSTs a JSON-RPC body and returns the parsed answer, its result read as `R` (the result type of the
 * body's method: rpc-json.ts for the bridge); throws on a non-200 or a JSON-RPC error.
 */
export async function rpc<R = unknown>(url: string, body: string, headers = rpcHeaders()): Promise<{ result: R; bytes: number }> {
  const res = await fetch(url, { method: 'POST', headers, body });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status}: ${text.slice(0, 300)}`);
  const json = JSON.parse(text) as { result?: unknown; error?: { message: string } };
  if (json.error) throw new Error(`${url}: JSON-RPC error: ${json.error.message}`);
  return { result: json.result as R, bytes: Buffer.byteLength(text) };
}

export interface BridgeFixture {
  /** The `serve` process. */
  proc: ChildProcess;
  /** From the spawn to the first `/health` 200, in ms (polled every 2 ms). */
  startMs: number;
  /** CPU time the process had used when the first `/health` 200 came, in ms (all threads). */
  startCpuMs: number;
  pid: number;
  endpoint: string;
  configDir: ConfigDir;
  storePath: string;
  receiver: WebhookReceiver;
  close(): Promise<void>;
}

export interface BridgeFixtureOptions {
  /** Use this store file (e.g. one filled beforehand) instead of a fresh one in the config dir. */
  storePath?: string;
  /** Extra flags for the bridge's Node (e.g. `--cpu-prof`). */
  execArgv?: string[];
  /** Config text appended to the bench config (e.g. `[log]` settings). */
  extraToml?: string;
  /** Start this CLI entry instead of the build of src/ (another build, e.g. of main, to compare). */
  main?: string;
}

/** Config text of the benchmark bridge. */
export function benchToml(o: { storePath: string; webhookUrl: string; port: number }): string {
  return `
[server]
listen = "127.0.0.1:${o.port}"
bearer_file = "bearer"

[store]
path = "${o.storePath}"

[mailbox]
kind = "maildir"
address = "me@bridge.test"
check_interval_s = 3600
[mailbox.maildir]
path = "Maildir"

[[agents]]
name = "${AGENT.name}"
address = "${AGENT.address}"
[agents.webhook]
url = "${o.webhookUrl}"
auth = "both"
bearer_file = "webhook-bearer"
secret_file = "webhook-secret"
timeout_s = 5
`;
}


/**
 * Resolves when `GET /health` on 127.0.0.1:`port` answers 200, trying every 2 ms (a refused
 * connection comes back at once, so the figure is within a few ms of the first possible answer).
 * @throws when `exited()` turns true or `timeoutMs` passes first
 */
export async function firstHealth(port: number, timeoutMs: number, exited: () => boolean): Promise<void> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const status = await new Promise<number>((resolve) => {
      const req = request({ host: '127.0.0.1', port, path: '/health', agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', () => resolve(0));
      req.end();
    });
    if (status === 200) return;
    if (exited()) throw new Error('the process exited');
    if (performance.now() > until) throw new Error(`no /health 200 within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

/**
 * The Node flags of the systemd template's `ExecStart` (launchd/a2a-mailbridge.service: the words
 * between `@NODE@` and the CLI entry), so the bench starts the bridge as the service does.
 * @throws when the template has no such line
 */
export function serviceNodeFlags(): string[] {
  const unit = readFileSync(new URL('../../launchd/a2a-mailbridge.service', import.meta.url), 'utf8');
  const m = /^ExecStart=@NODE@ (.*?) @INSTALL_DIR@\/dist\/cli\/main\.js /m.exec(unit);
  if (!m) throw new Error('launchd/a2a-mailbridge.service: no ExecStart=@NODE@ <flags> @INSTALL_DIR@/dist/cli/main.js line');
  return m[1]!.split(' ');
}

export async function startBridgeFixture(o: BridgeFixtureOptions = {}): Promise<BridgeFixture> {
  const main = o.main ?? (await buildBridge());
  const receiver = await startWebhookReceiver({ secret: TEST_WEBHOOK_SECRET, bearer: TEST_WEBHOOK_BEARER });
  const configDir = makeConfigDir('');
  const storePath = o.storePath ?? join(configDir.dir, 'state', 'bridge.sqlite');
  const port = await freePort();
  // Written now that the folder (and so the store path) is known.
  writeFileSync(configDir.configPath, benchToml({ storePath, webhookUrl: receiver.url, port }) + (o.extraToml ?? ''));
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(configDir.dir, 'Maildir', sub), { recursive: true });
  // The Node flags and environment the service templates in launchd/ start the bridge with: the
  // compile cache in the folder of the store, which outlives the process as a state folder does.
  const serviceFlags = serviceNodeFlags();
  const env = { ...process.env, NODE_COMPILE_CACHE: join(dirname(storePath), 'node-compile-cache') };
  const spawnedAt = performance.now();
  const proc = spawn(process.execPath, [...serviceFlags, ...(o.execArgv ?? []), main, '--config', configDir.configPath, 'serve'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  live.add(proc);
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => {
    if (stderr.length < 20_000) stderr += d.toString('utf8');
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const base = `http://127.0.0.1:${port}`;
  try {
    await firstHealth(port, 60_000, () => proc.exitCode !== null);
  } catch (err) {
    throw new Error(`the bridge did not start: ${(err as Error).message}:\n${stderr.slice(-3000)}`, { cause: err });
  }
  const startMs = performance.now() - spawnedAt;
  const startCpuMs = cpuMsOf(proc.pid!);
  return {
    proc,
    startMs,
    startCpuMs,
    pid: proc.pid!,
    endpoint: `${base}/agents/grok`,
    configDir,
    storePath,
    receiver,
    async close() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(t);
      }
      live.delete(proc);
      await receiver.close();
      rmSync(configDir.dir, { recursive: true, force: true });
    },
  };
}

/**
 * New work on a fresh context through the real path (stored, webhook accepted): a WORKING task.
 * Then one GetTask, which runs the first (empty) mailbox check, so none is due for an hour.
 */
export async function workingTask(f: BridgeFixture, ask = 'Survey the 2025 papers on retrieval-augmented generation and summarise the three strongest.'): Promise<{ taskId: string; contextId: string }> {
  const contextId = `ctx-${hex(8)}`;
  const sent = await rpc<V1SendResult>(f.endpoint, sendBody(ask, contextId));
  const task = sent.result.task!;
  if (task.status.state !== 'TASK_STATE_WORKING') throw new Error(`expected a WORKING task, got ${task.status.state}`);
  await rpc(f.endpoint, getTaskBody(task.id));
  return { taskId: task.id, contextId };
}
