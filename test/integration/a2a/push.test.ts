import { createServer, type Socket } from 'node:net';
import { TaskState } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFenced } from '../../helpers/agent-text.js';
import { hex, useHarness } from '../../helpers/bridge-harness.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';

/**
 * Push notifications (A2A v1.0 §3.1.7–3.1.10, §4.3.3) through the official @a2a-js/sdk client, on
 * Dovecot with `mailbox.watch = false`: a task with a push configuration holds the watcher on
 * demand, so the reply is applied and POSTed with no call at all. The receiver is a real node:http
 * server on loopback.
 */

const suite = useHarness({});
let push: WebhookReceiver;
beforeAll(async () => {
  push = await startWebhookReceiver({ bearer: 'push-credential-123', path: '/a2a-push' });
});
afterAll(async () => {
  await push.close();
});

function sdkMessage(text: string, contextId: string, configuration?: unknown) {
  return {
    message: { role: 1, parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain' }], messageId: hex(16), contextId },
    ...(configuration ? { configuration } : {}),
  } as never;
}

type PushBody = { task: { id: string; status: { state: string }; artifacts?: { parts: { text?: string }[] }[] } };

describe('push notifications (SDK client, watch = false)', () => {
  it('a push config given with SendMessage on a loopback receiver gets one POST per state change, in order, with the token and the authentication', async () => {
    const { h, dovecot } = suite;
    expect(h.config.mailbox.watch).toBe(false);
    const config = { tenant: '', id: 'cfg-1', taskId: '', url: push.url, token: 'tok-abc', authentication: { scheme: 'Bearer', credentials: 'push-credential-123' } };
    const sent = (await h.client.sendMessage(sdkMessage('Push me the result', `ctx-${hex(8)}`, { taskPushNotificationConfig: config, acceptedOutputModes: [], returnImmediately: false }))) as {
      id: string;
      status: { state: number };
    };
    expect(sent.status.state).toBe(TaskState.TASK_STATE_WORKING);
    const first = await push.waitForRequests(1);
    const envelope = h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === sent.id)!;
    await dovecot.append(await h.reply(envelope, { answer: 'Pushed answer.' }));
    const both = await push.waitForRequests(2, 15_000);
    expect(first[0]!.verified).toBe(true);
    const bodies = both.map((r) => JSON.parse(r.body.toString('utf8')) as PushBody);
    expect(bodies.map((b) => [b.task.id, b.task.status.state])).toEqual([
      [sent.id, 'TASK_STATE_WORKING'],
      [sent.id, 'TASK_STATE_COMPLETED'],
    ]);
    expectFenced(bodies[1]!.task.artifacts![0]!.parts[0]!.text, 'Pushed answer.');
    // The COMPLETED notification carries GetTask's status and artifacts, part for part (one view renders both).
    const got = (await h.rpc({ jsonrpc: '2.0', id: 9, method: 'GetTask', params: { id: sent.id } })).json.result as unknown as PushBody['task'];
    expect(bodies[1]!.task.status).toEqual(got.status);
    expect(bodies[1]!.task.artifacts).toEqual(got.artifacts);
    for (const r of both) {
      expect(r.method).toBe('POST');
      expect(r.path).toBe('/a2a-push');
      expect(r.headers['x-a2a-notification-token']).toBe('tok-abc');
      expect(r.headers.authorization).toBe('Bearer push-credential-123');
      expect(r.headers['content-type']).toBe('application/json');
    }
    await h.app.bridge.idle();
    expect(h.app.bridge.ctx.store.push.deliveriesOf(sent.id).map((d) => [d.taskState, d.state, d.attempts])).toEqual([
      ['WORKING', 'delivered', 1],
      ['COMPLETED', 'delivered', 1],
    ]);
    expect(push.requests).toHaveLength(2);
  });

  it('the four config methods: create, get (without credentials), list, delete (idempotent); an unknown config is TaskNotFound; a non-loopback URL is refused', async () => {
    const { h } = suite;
    const task = (await h.client.sendMessage(sdkMessage('A job to watch', `ctx-${hex(8)}`))) as { id: string };
    const created = await h.client.createTaskPushNotificationConfig({ tenant: '', id: 'cfg-2', taskId: task.id, url: push.url, token: 't2', authentication: { scheme: 'Bearer', credentials: 'secret' } });
    expect(created).toMatchObject({ id: 'cfg-2', taskId: task.id, url: push.url, token: 't2', authentication: { scheme: 'Bearer', credentials: '' } });
    expect(await h.client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-2' })).toMatchObject({ id: 'cfg-2', url: push.url });
    expect((await h.client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs.map((c) => c.id)).toEqual(['cfg-2']);
    await h.client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-2' });
    await h.client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-2' });
    expect((await h.client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs).toEqual([]);
    await expect(h.client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-2' })).rejects.toMatchObject({ envelopeCode: -32001 });

    for (const url of ['http://192.0.2.1/hook', 'http://example.com/hook', 'ftp://127.0.0.1/x', 'http://user:pw@127.0.0.1/x']) {
      const r = await h.rpc({ jsonrpc: '2.0', id: 1, method: 'CreateTaskPushNotificationConfig', params: { taskId: task.id, url } });
      expect(r.json.error?.code, url).toBe(-32602);
    }
    // v0.3 names and shapes
    const set = await h.rpc({ jsonrpc: '2.0', id: 2, method: 'tasks/pushNotificationConfig/set', params: { taskId: task.id, pushNotificationConfig: { id: 'old', url: push.url, authentication: { schemes: ['Bearer'], credentials: 'x' } } } }, { 'a2a-version': '0.3' });
    expect(set.json.result).toEqual({ taskId: task.id, pushNotificationConfig: { id: 'old', url: push.url, authentication: { schemes: ['Bearer'] } } });
    const list = await h.rpc({ jsonrpc: '2.0', id: 3, method: 'tasks/pushNotificationConfig/list', params: { id: task.id } }, { 'a2a-version': '0.3' });
    expect(list.json.result).toHaveLength(1);
    const del = await h.rpc({ jsonrpc: '2.0', id: 4, method: 'tasks/pushNotificationConfig/delete', params: { id: task.id, pushNotificationConfigId: 'old' } }, { 'a2a-version': '0.3' });
    expect(del.json).toMatchObject({ result: null });
  });

  it('a receiver that never answers holds its own slots only: a later notification to another receiver is POSTed while those still hang', async () => {
    const { h } = suite;
    // A loopback server that accepts and never answers (a hung receiver).
    const open = new Set<Socket>();
    let accepted = 0;
    let closed = 0;
    let onAccept = (): void => undefined;
    const hung = createServer((sock) => {
      accepted += 1;
      open.add(sock);
      sock.on('close', () => ((closed += 1), open.delete(sock)));
      sock.on('data', () => undefined);
      onAccept();
    });
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
    const hungUrl = `http://127.0.0.1:${(hung.address() as { port: number }).port}/hook`;
    try {
      const stuck = (await h.client.sendMessage(sdkMessage('A job whose receiver hangs', `ctx-${hex(8)}`))) as { id: string };
      for (let i = 0; i < 10; i++) await h.client.createTaskPushNotificationConfig({ tenant: '', id: `hang-${i}`, taskId: stuck.id, url: hungUrl, token: '', authentication: undefined });
      const fourHang = new Promise<void>((resolve) => (onAccept = () => accepted >= 4 && resolve()));
      await h.client.cancelTask({ tenant: '', id: stuck.id, metadata: undefined }); // CANCELED: 10 deliveries to the hung receiver
      await fourHang;
      const before = push.requests.length;
      const config = { tenant: '', id: 'cfg-after', taskId: '', url: push.url, token: 'tok-after', authentication: { scheme: 'Bearer', credentials: 'push-credential-123' } };
      const later = (await h.client.sendMessage(sdkMessage('A job with a healthy receiver', `ctx-${hex(8)}`, { taskPushNotificationConfig: config, acceptedOutputModes: [], returnImmediately: false }))) as { id: string };
      const got = await push.waitForRequests(before + 1, 15_000);
      expect((JSON.parse(got.at(-1)!.body.toString('utf8')) as PushBody).task.id).toBe(later.id);
      // When it arrived, the hung receiver held exactly its per-origin share, none of them timed out yet.
      expect({ accepted, open: open.size, closed }).toEqual({ accepted: 4, open: 4, closed: 0 });
    } finally {
      for (const sock of open) sock.destroy();
      await new Promise<void>((resolve) => hung.close(() => resolve()));
    }
  });
});
