/**
 * Push notifications of a change another process made (A2A v1.0 §3.1.7; docs/push.md), with
 * `mailbox.watch = false` and no call at all: the operator's `a2a-mailbridge retry` (a CLI process)
 * reopens a task that failed by dispatch and has a push configuration. `serve` learns of the commit
 * by its store generation on its upkeep timer: it sends the notifications queued by that commit,
 * and holds the watcher again for the reopened task, so the agent's reply is read and pushed too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hermesBody, hex, useHarness } from '../../helpers/bridge-harness.js';
import { runCli } from '../../helpers/cli.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';

let accept = false;
// The watcher on demand stops as soon as nothing holds it (no linger), so only the upkeep timer can see the CLI's commit.
const suite = useHarness({ respond: () => ({ status: accept ? 202 : 404 }), upkeepEveryMs: 100, watchLingerMs: 0 });
let push: WebhookReceiver;
beforeAll(async () => {
  push = await startWebhookReceiver({ bearer: 'push-credential', path: '/a2a-push' });
});
afterAll(async () => {
  await push.close();
});

type PushBody = { task: { id: string; status: { state: string } } };
const states = (n: number) => push.waitForRequests(n, 10_000).then((rs) => rs.map((r) => (JSON.parse(r.body.toString('utf8')) as PushBody).task.status.state));

describe('push after another process changed the task', () => {
  it("the CLI's retry of a dispatch-failed task is pushed with no call, and so is the reply that follows", async () => {
    const { h, dovecot } = suite;
    const body = hermesBody('A job the webhook refuses first', `ctx-${hex(8)}`);
    const sent = await h.rpc({ ...body, params: { ...body.params, configuration: { taskPushNotificationConfig: { id: 'cfg-1', url: push.url, token: 'tok', authentication: { scheme: 'Bearer', credentials: 'push-credential' } } } } });
    const task = sent.json.result!.task!;
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(await states(1)).toEqual(['TASK_STATE_FAILED']);
    await h.app.bridge.idle(); // the delivery recorded: nothing holds the watcher any more

    accept = true;
    const run = await runCli(['--config', h.configDir.configPath, 'retry', task.id]);
    expect(run.stderr).toBe('');
    expect((await states(3)).slice(1)).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']);

    const envelope = h.receiver.requests.map((r) => r.envelope!).findLast((e) => e.task_id === task.id)!;
    await dovecot.append(await h.reply(envelope, { answer: 'Done after the retry.' }));
    expect((await states(4)).at(-1)).toBe('TASK_STATE_COMPLETED');
  });
});
