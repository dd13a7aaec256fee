import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/config.js';
import { createLogger } from '../../../src/log.js';
import { hermesBody, hex } from '../../helpers/bridge-harness.js';
import { runCli } from '../../helpers/cli.js';
import { makeConfigDir, minimalToml, TEST_BEARER, TEST_WEBHOOK_BEARER, TEST_WEBHOOK_SECRET, type ConfigDir } from '../../helpers/config-dir.js';
import { freePort } from '../../helpers/free-port.js';
import { startWebhookReceiver } from '../../helpers/webhook-receiver.js';
import { killAll, readStore, startBridgeProcess } from '../faults/bridge-process.js';

/**
 * `a2a-mailbridge cancel` beside a real `serve` process: the CLI cancels through core's
 * cancelAndNotify (as CancelTask does), the running bridge's GetTask answers CANCELED at once (its
 * views follow the store's generation), and the cancel notice is sent by the CLI itself, checked
 * here by the receiver's standardwebhooks verification.
 */
type Task = { id: string; status: { state: string; message?: { parts: { text?: string }[] } } };
type Answer = { result?: { task?: Task } & Task; error?: { code: number; message: string } };

// A job whose text says "refuse" gets 404 (the task FAILS by dispatch); a cancel notice for a task
// whose job said "notice-503" gets 503; a job saying "never-accepted" gets 503 (retried in an
// hour: the task stays SUBMITTED); everything else verified gets 202.
const receiver = await startWebhookReceiver({
  secret: TEST_WEBHOOK_SECRET,
  bearer: TEST_WEBHOOK_BEARER,
  respond: (req) => {
    if (!req.verified) return { status: 401 };
    if (req.envelope?.ask.includes('refuse')) return { status: 404 };
    if (req.envelope?.cancel && req.envelope.ask.includes('notice-503')) return { status: 503 };
    // Never accepted: 503 with a Retry-After of an hour, so no second attempt comes while the test runs.
    if (req.envelope?.ask.includes('never-accepted')) return { status: 503, headers: { 'retry-after': '3600' } };
    return { status: 202 };
  },
});
const dirs: ConfigDir[] = [];
afterEach(killAll);
afterAll(async () => {
  await receiver.close();
  for (const c of dirs) rmSync(c.dir, { recursive: true, force: true });
});

function configDir(listen: string, webhookToml: string): ConfigDir {
  const c = makeConfigDir(minimalToml({ listen, webhookUrl: receiver.url, extraAgent: webhookToml }));
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
  dirs.push(c);
  return c;
}

const TASK_LINE = (id: string, was: string) => `task ${id} (grok) canceled: it was ${was}, it is CANCELED`;
const REVOKED = 'a reply the agent still sends is recorded and never applied (its token is revoked)';

describe('a2a-mailbridge cancel', () => {
  it('cancels an open task beside a running serve: its GetTask answers CANCELED, the CLI sends the signed cancel notice; a finished task and an unknown id are refused (exit 1)', async () => {
    const listen = `127.0.0.1:${await freePort()}`;
    const c = configDir(listen, 'notify_cancel = true');
    await startBridgeProcess(c.configPath);
    const endpoint = `http://${listen}/agents/grok`;
    const call = async (body: unknown): Promise<Answer> =>
      (await (await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}`, 'a2a-version': '1.0' }, body: JSON.stringify(body) })).json()) as Answer;
    const send = async (text: string): Promise<Task> => (await call(hermesBody(text, `ctx-${hex(8)}`))).result!.task!;
    const getTask = async (id: string): Promise<Task> => (await call({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id } })).result!;

    const open = await send('A long job');
    expect(open.status.state).toBe('TASK_STATE_WORKING');
    const failed = await send('A job the webhook will refuse');
    expect(failed.status.state).toBe('TASK_STATE_FAILED');
    const hooks = receiver.requests.length;

    const run = await runCli(['--config', c.configPath, 'cancel', open.id.slice(0, 8)]);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toBe(`${TASK_LINE(open.id, 'WORKING')}\n  cancel notice sent to grok's webhook (webhook-id cancel_${open.id.replaceAll('-', '')}): accepted (HTTP 202)\n`);

    // The running bridge answers from the store the CLI changed.
    const after = await getTask(open.id);
    expect(after.status.state).toBe('TASK_STATE_CANCELED');
    expect(after.status.message!.parts[0]!.text).toBe('Canceled: canceled by the operator (a2a-mailbridge cancel).');

    // The notice: one POST, verified with the standardwebhooks library, its own webhook-id.
    expect(receiver.requests).toHaveLength(hooks + 1);
    const notice = receiver.requests.at(-1)!;
    expect(notice.verified).toBe(true);
    expect(notice.id).toBe(`cancel_${open.id.replaceAll('-', '')}`);
    expect(notice.envelope).toMatchObject({ task_id: open.id, turn: 1, cancel: true, ask: 'A long job' });
    expect(notice.envelope!.constraints).toBe(`Task ${open.id} was canceled (canceled by the operator (a2a-mailbridge cancel)). Stop work on it; no reply is expected.`);
    expect(readStore(join(c.dir, 'state', 'bridge.sqlite'), (db) => db.attempts.ofTask(open.id).map((a) => [a.dispatchId.startsWith('cancel_'), a.outcome]))).toEqual([
      [false, 'accepted'],
      [true, 'accepted'],
    ]);

    // Refused: the canceled task again, a FAILED one, an unknown id; each reported, exit 1, nothing sent.
    const unknown = '00000000-0000-4000-8000-000000000000';
    const again = await runCli(['--config', c.configPath, 'cancel', open.id, failed.id, unknown]);
    expect(again.status).toBe(1);
    expect(again.stdout).toBe('');
    expect(again.stderr.split('\n')).toEqual([
      `a2a-mailbridge: Task ${open.id} is already canceled; there is nothing more to cancel; nothing changed`,
      `a2a-mailbridge: Task ${failed.id} cannot be canceled: it has already failed; nothing changed`,
      `a2a-mailbridge: no task ${unknown}; list the open tasks with: a2a-mailbridge --config ${c.configPath} tasks --state open`,
      '',
    ]);
    expect((await getTask(failed.id)).status.state).toBe('TASK_STATE_FAILED');
    expect(receiver.requests).toHaveLength(hooks + 1);

    // Several ids, one open: it is canceled, the unknown one reported, exit 1.
    const second = await send('Another long job');
    const mixed = await runCli(['--config', c.configPath, 'cancel', 'ffffffff', second.id]);
    expect(mixed.status).toBe(1);
    expect(mixed.stderr).toBe(`a2a-mailbridge: no task ffffffff; list the open tasks with: a2a-mailbridge --config ${c.configPath} tasks --state open\n`);
    expect(mixed.stdout).toMatch(new RegExp(`^${TASK_LINE(second.id, 'WORKING').replace(/[()]/g, '\\$&')}\\n  cancel notice sent to grok's webhook \\(webhook-id cancel_[0-9a-f]{32}\\): accepted \\(HTTP 202\\)\\n$`));
    expect((await getTask(second.id)).status.state).toBe('TASK_STATE_CANCELED');

    // A prefix too short to be looked up is said to be so, not "no task".
    const short = await runCli(['--config', c.configPath, 'cancel', second.id.slice(0, 3)]);
    expect(short.stderr).toBe(`a2a-mailbridge: no task ${second.id.slice(0, 3)} (a prefix needs at least 4 characters); list the open tasks with: a2a-mailbridge --config ${c.configPath} tasks --state open\n`);
  });

  it('with no bridge running: cancels, says the notice was not accepted (503) and not tried again, and that no bridge runs', async () => {
    const c = configDir('127.0.0.1:0', 'notify_cancel = true');
    const config = loadConfig(c.configPath);
    const app = await startApp(config, { log: createLogger('silent') });
    const res = await fetch(app.server.endpoint(config.agents[0]!), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}` },
      body: JSON.stringify(hermesBody('A job with a notice-503 agent', `ctx-${hex(8)}`)),
    });
    const task = ((await res.json()) as Answer).result!.task!;
    expect(task.status.state).toBe('TASK_STATE_WORKING');
    await app.close();

    const run = await runCli(['--config', c.configPath, 'cancel', task.id]);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toBe(
      `${TASK_LINE(task.id, 'WORKING')}\n` +
        `  cancel notice to grok's webhook (webhook-id cancel_${task.id.replaceAll('-', '')}) NOT accepted: it failed (HTTP 503); it is not tried again, so the agent may still be working on the task; ${REVOKED}\n` +
        `no bridge runs on this store now: callers learn of the cancel at their next call once one runs, and it sends the push notifications then (a2a-mailbridge --config ${c.configPath} serve)\n`,
    );
    expect(readStore(config.store.path, (db) => db.tasks.get(task.id)?.state)).toBe('CANCELED');
    expect(receiver.requests.at(-1)!.envelope).toMatchObject({ task_id: task.id, cancel: true });
  });

  it('a SubscribeToTask stream open on a running bridge hears a cancel from the CLI (another process: src/core/other-commits.ts) and ends with TASK_STATE_CANCELED', async () => {
    const c = configDir('127.0.0.1:0', '');
    const config = loadConfig(c.configPath);
    const app = await startApp(config, { log: createLogger('silent') });
    try {
      const endpoint = app.server.endpoint(config.agents[0]!);
      const headers = { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}`, 'a2a-version': '1.0' };
      const sent = await fetch(endpoint, { method: 'POST', headers, body: JSON.stringify(hermesBody('A job to cancel', `ctx-${hex(8)}`)) });
      const task = ((await sent.json()) as Answer).result!.task!;
      const stream = await fetch(endpoint, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 'sub', method: 'SubscribeToTask', params: { id: task.id } }) });
      const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = '';
      // The first event (the task, WORKING) is there before the CLI runs.
      while (!text.includes('TASK_STATE_WORKING')) text += (await reader.read()).value ?? '';
      const run = await runCli(['--config', c.configPath, 'cancel', task.id]);
      expect(run.status, run.stderr).toBe(0);
      // Read to the stream's end: the bridge ends it after the final (CANCELED) event.
      for (let r = await reader.read(); !r.done; r = await reader.read()) text += r.value;
      const events = text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as { result: { status?: { state: string; message?: { parts: { text?: string }[] } }; statusUpdate?: { status: { state: string; message?: { parts: { text?: string }[] } } } } });
      const last = events.at(-1)!.result;
      const status = last.statusUpdate?.status ?? last.status!;
      expect(status.state).toBe('TASK_STATE_CANCELED');
      expect(status.message!.parts[0]!.text).toBe('Canceled: canceled by the operator (a2a-mailbridge cancel).');
    } finally {
      await app.close();
    }
  });

  it('with notify_cancel off: says the agent is not told; --all-open --agent cancels every open task of the agent', async () => {
    const c = configDir('127.0.0.1:0', '');
    const config = loadConfig(c.configPath);
    const app = await startApp(config, { log: createLogger('silent') });
    const send = async (text: string): Promise<Task> =>
      ((await (
        await fetch(app.server.endpoint(config.agents[0]!), {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}` },
          body: JSON.stringify(hermesBody(text, `ctx-${hex(8)}`)),
        })
      ).json()) as Answer).result!.task!;
    const [task, other, third] = [await send('A job'), await send('Another job'), await send('A third job')];
    await app.close();
    const hooks = receiver.requests.length;
    const run = await runCli(['--config', c.configPath, 'cancel', task.id]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout.split('\n').slice(0, 2)).toEqual([TASK_LINE(task.id, 'WORKING'), `  no cancel notice: agents.webhook.notify_cancel is off for grok, so the agent is not told; ${REVOKED}`]);
    expect(receiver.requests).toHaveLength(hooks);

    expect((await runCli(['--config', c.configPath, 'cancel', '--all-open'])).stderr).toBe('a2a-mailbridge: --all-open needs --agent <name>: whose open tasks to cancel\n');
    const nobody = await runCli(['--config', c.configPath, 'cancel', '--all-open', '--agent', 'nobody']);
    expect([nobody.status, nobody.stderr]).toEqual([1, `a2a-mailbridge: no agent nobody in the config, which has grok; see a2a-mailbridge --config ${c.configPath} config\n`]);
    const all = await runCli(['--config', c.configPath, 'cancel', '--all-open', '--agent', 'grok']);
    expect(all.status, all.stderr).toBe(0);
    expect(all.stdout.split('\n').filter((l) => l.startsWith('task ')).sort()).toEqual([TASK_LINE(other.id, 'WORKING'), TASK_LINE(third.id, 'WORKING')].sort());
    expect(readStore(config.store.path, (db) => [task.id, other.id, third.id].map((id) => db.tasks.get(id)?.state))).toEqual(['CANCELED', 'CANCELED', 'CANCELED']);
    const none = await runCli(['--config', c.configPath, 'cancel', '--all-open', '--agent', 'grok']);
    expect([none.status, none.stdout]).toEqual([0, 'grok has no open task; nothing to cancel\n']);
  });

  it('on a config whose store does not exist yet: a mistyped --agent and a missing store are refused by cancel and retry before anything is opened, and no store is created (tasks still says serve creates it)', async () => {
    const c = configDir('127.0.0.1:0', '');
    const state = join(c.dir, 'state');
    const noStore = `a2a-mailbridge: no store at ${join(state, 'bridge.sqlite')} (config key store.path); \`a2a-mailbridge --config ${c.configPath} serve\` creates it on its first start\n`;
    const typo = await runCli(['--config', c.configPath, 'cancel', '--all-open', '--agent', 'grk']);
    expect([typo.status, typo.stdout, typo.stderr]).toEqual([1, '', `a2a-mailbridge: no agent grk in the config, which has grok (did you mean "grok"?); see a2a-mailbridge --config ${c.configPath} config\n`]);
    const all = await runCli(['--config', c.configPath, 'cancel', '--all-open', '--agent', 'grok']);
    expect([all.status, all.stdout, all.stderr]).toEqual([2, '', noStore]);
    const byId = await runCli(['--config', c.configPath, 'cancel', '00000000-0000-4000-8000-000000000000']);
    expect([byId.status, byId.stdout, byId.stderr]).toEqual([2, '', noStore]);
    const retry = await runCli(['--config', c.configPath, 'retry', '00000000-0000-4000-8000-000000000000']);
    expect([retry.status, retry.stdout, retry.stderr]).toEqual([2, '', noStore]);
    expect(existsSync(state)).toBe(false);
    const tasks = await runCli(['--config', c.configPath, 'tasks']);
    expect([tasks.status, tasks.stderr]).toEqual([2, noStore]);
  });

  it('a task whose webhook was never accepted: no cancel notice, from the CLI or from A2A CancelTask; the CLI says the agent never received the job', async () => {
    const c = configDir('127.0.0.1:0', 'notify_cancel = true');
    const config = loadConfig(c.configPath);
    const app = await startApp(config, { log: createLogger('silent') });
    const endpoint = app.server.endpoint(config.agents[0]!);
    const call = async (body: unknown): Promise<Answer> =>
      (await (await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}` }, body: JSON.stringify(body) })).json()) as Answer;
    const send = async (text: string): Promise<Task> => (await call(hermesBody(text, `ctx-${hex(8)}`))).result!.task!;
    const viaCli = await send('A job for a never-accepted webhook');
    const viaA2a = await send('Another job for a never-accepted webhook');
    expect([viaCli.status.state, viaA2a.status.state]).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_SUBMITTED']);
    // A2A CancelTask: canceled, and no notice goes out in the background (app.close waits for what it started).
    expect((await call({ jsonrpc: '2.0', id: 1, method: 'CancelTask', params: { id: viaA2a.id } })).result!.status.state).toBe('TASK_STATE_CANCELED');
    await app.close();
    const notices = (id: string) => receiver.requests.filter((r) => r.envelope?.task_id === id && r.envelope.cancel === true);
    expect(notices(viaA2a.id)).toEqual([]);

    const run = await runCli(['--config', c.configPath, 'cancel', viaCli.id]);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout.split('\n').slice(0, 2)).toEqual([
      TASK_LINE(viaCli.id, 'SUBMITTED'),
      "  no cancel notice: grok never received the job (no webhook attempt reached it: each was turned away or could not connect; and no reply came), so it has nothing to stop",
    ]);
    expect(notices(viaCli.id)).toEqual([]);
    // Each task: its one refused dispatch attempt, and no cancel notice recorded.
    expect(readStore(config.store.path, (db) => [viaCli.id, viaA2a.id].map((id) => [db.tasks.get(id)?.state, db.attempts.ofTask(id).map((a) => [a.dispatchId.startsWith('cancel_'), a.outcome])]))).toEqual([
      ['CANCELED', [[false, 'retry']]],
      ['CANCELED', [[false, 'retry']]],
    ]);
  });
});
