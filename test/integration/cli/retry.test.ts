import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/config.js';
import { createLogger } from '../../../src/log.js';
import { hermesBody } from '../../helpers/bridge-harness.js';
import { runCli } from '../../helpers/cli.js';
import { makeConfigDir, minimalToml, TEST_BEARER, TEST_WEBHOOK_BEARER, TEST_WEBHOOK_SECRET } from '../../helpers/config-dir.js';
import { startWebhookReceiver } from '../../helpers/webhook-receiver.js';
import type { RpcAnswer, V1SendResult } from '../../helpers/rpc-json.js';

let accept = false;
const receiver = await startWebhookReceiver({
  secret: TEST_WEBHOOK_SECRET,
  bearer: TEST_WEBHOOK_BEARER,
  respond: (req) => (req.verified && accept ? { status: 202 } : { status: 404 }),
});
afterAll(() => receiver.close());

describe('a2a-mailbridge retry', () => {
  it('re-dispatches a dispatch-failed task with a new webhook-id and a fresh token, and refuses other tasks', async () => {
    const c = makeConfigDir(minimalToml({ webhookUrl: receiver.url }));
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
    const config = loadConfig(c.configPath);
    const app = await startApp(config, { log: createLogger('silent') });
    const endpoint = app.server.endpoint(config.agents[0]!);
    const res = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}` },
      body: JSON.stringify(hermesBody('job for a wrong URL', 'ctx-retry')),
    });
    const task = ((await res.json()) as RpcAnswer<V1SendResult>).result!.task!;
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(task.status.message!.parts[0]!.text).toMatch(/the webhook refused the job \(HTTP 404\)/);

    accept = true;
    const run = await runCli(['--config', c.configPath, 'retry', task.id.slice(0, 8)]);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^task ${task.id} re-dispatched with webhook-id msg_[0-9a-f]{32}; its first attempt was accepted \\(HTTP 202\\); the task is WORKING\\n$`));
    expect(app.bridge.ctx.store.tasks.get(task.id)?.state).toBe('WORKING');
    expect(receiver.requests).toHaveLength(2);
    expect(receiver.distinctIds()).toHaveLength(2);
    expect(receiver.requests[1]!.envelope!.reply_token).not.toBe(receiver.requests[0]!.envelope!.reply_token);
    expect(receiver.requests[1]!.envelope).toMatchObject({ task_id: task.id, turn: 1, ask: 'job for a wrong URL' });

    const again = await runCli(['--config', c.configPath, 'retry', task.id]);
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/is WORKING: its webhook was accepted at \S+Z and the agent has the job; its reply comes by email\. `retry` is for a task that FAILED by dispatch/);
    await app.close();
  });
});
