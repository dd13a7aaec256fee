import { TaskState, type StreamResponse } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { TEST_BEARER } from '../../helpers/config-dir.js';
import { hex, useHarness } from '../../helpers/bridge-harness.js';

/**
 * The HTTP+JSON binding (A2A v1.0 §11) on the same handler as JSON-RPC, through the official
 * @a2a-js/sdk REST transport, which picks the card's HTTP+JSON interface; and raw requests for the
 * error form (AIP-193, §11.6) and the routes' methods.
 */

const suite = useHarness({ serverToml: 'wait_budget_s = 6\ncaller_timeout_s = 60' });
let rest: Client;
const paths: string[] = [];

beforeAll(async () => {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${TEST_BEARER}`);
    paths.push(`${init?.method ?? 'GET'} ${new URL(input instanceof Request ? input.url : String(input)).pathname}`);
    return fetch(input, { ...init, headers });
  };
  rest = await new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new RestTransportFactory({ fetchImpl })], preferredTransports: ['HTTP+JSON'] })).createFromUrl(`${suite.h.endpoint}/`);
});

function sdkMessage(text: string, contextId: string) {
  return { message: { role: 1, parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain' }], messageId: hex(16), contextId } } as never;
}

const raw = (path: string, init: RequestInit = {}) =>
  fetch(`${suite.h.endpoint}${path}`, { ...init, headers: { authorization: `Bearer ${TEST_BEARER}`, 'a2a-version': '1.0', ...(init.headers as Record<string, string>) } });

describe('HTTP+JSON binding (SDK REST transport)', () => {
  it('send, get, list, stream, subscribe, cancel and the push config routes work through the SDK', async () => {
    const { h, dovecot } = suite;
    const ctx = `ctx-${hex(8)}`;
    const task = (await rest.sendMessage(sdkMessage('A REST job', ctx))) as { id: string; status: { state: number } };
    expect(task.status.state).toBe(TaskState.TASK_STATE_WORKING);
    expect((await rest.getTask({ tenant: '', id: task.id })).status?.state).toBe(TaskState.TASK_STATE_WORKING);
    const listed = await rest.listTasks({ tenant: '', contextId: ctx, status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined });
    expect(listed.tasks.map((t) => t.id)).toEqual([task.id]);

    await rest.createTaskPushNotificationConfig({ tenant: '', id: 'p1', taskId: task.id, url: 'http://127.0.0.1:9/none', token: '', authentication: undefined });
    expect((await rest.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs.map((c) => c.id)).toEqual(['p1']);
    expect((await rest.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'p1' })).url).toBe('http://127.0.0.1:9/none');
    await rest.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'p1' });

    // subscribe, then the reply lands: the artifact and COMPLETED, as bare StreamResponses
    const seen: StreamResponse[] = [];
    let first!: () => void;
    const gotFirst = new Promise<void>((r) => (first = r));
    const sub = (async () => {
      for await (const e of rest.resubscribeTask({ tenant: '', id: task.id })) {
        seen.push(e);
        first();
      }
    })();
    await gotFirst;
    const envelope = h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === task.id)!;
    await dovecot.append(await h.reply(envelope, { answer: 'REST answer.' }));
    await sub;
    expect(seen.map((e) => e.payload!.$case)).toEqual(['task', 'artifactUpdate', 'statusUpdate']);

    const streamed: StreamResponse[] = [];
    const stream = rest.sendMessageStream(sdkMessage('A streamed REST job', `ctx-${hex(8)}`));
    for await (const e of stream) {
      streamed.push(e);
      if (streamed.length === 2) break;
    }
    expect(streamed.map((e) => e.payload!.$case)).toEqual(['task', 'statusUpdate']);
    const open = streamed[0]!.payload!.$case === 'task' ? streamed[0]!.payload!.value.id : '';
    expect((await rest.cancelTask({ tenant: '', id: open, metadata: undefined })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);

    expect(paths).toEqual(
      expect.arrayContaining([
        'POST /agents/grok/message:send',
        `GET /agents/grok/tasks/${task.id}`,
        'GET /agents/grok/tasks',
        `POST /agents/grok/tasks/${task.id}/pushNotificationConfigs`,
        `DELETE /agents/grok/tasks/${task.id}/pushNotificationConfigs/p1`,
        'POST /agents/grok/message:stream',
        `POST /agents/grok/tasks/${open}:cancel`,
      ]),
    );
  });

  it('errors are AIP-193 bodies with the HTTP status of §5.4; the bearer, Content-Type and method rules hold', async () => {
    const missing = await raw('/tasks/00000000-0000-4000-8000-000000000000');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({
      error: { code: 404, status: 'NOT_FOUND', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' }] },
    });
    const text = await raw('/message:send', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
    expect(text.status).toBe(415);
    expect(((await text.json()) as { error: { details: { reason: string }[] } }).error.details[0]!.reason).toBe('CONTENT_TYPE_NOT_SUPPORTED');
    expect((await fetch(`${suite.h.endpoint}/tasks`)).status).toBe(401);
    expect((await raw('/message:send')).status).toBe(405);
    expect((await raw('/nothing/here')).status).toBe(404);
    // An agent that does not exist, or the server root (JSON-RPC posted to the bare address): the
    // 404 names those that do (public in their cards anyway), never what was sent; elsewhere a plain 404.
    const base = suite.h.endpoint.replace(/\/agents\/grok$/, '');
    const rpcBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage<script>', params: {} });
    for (const path of ['/', '/agents/nope', '/agents/nope/message:send', '/agents/%E0%A4%A/tasks']) {
      const nope = await fetch(`${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${TEST_BEARER}`, 'content-type': 'application/json' }, body: rpcBody });
      expect(nope.status, path).toBe(404);
      expect(await nope.json(), path).toEqual({ error: `no agent at this path; the agents are: grok (${suite.h.endpoint})`, agents: ['grok'] });
    }
    const root = await fetch(`${base}/`);
    expect([root.status, await root.json()]).toEqual([404, { error: `no agent at this path; the agents are: grok (${suite.h.endpoint})`, agents: ['grok'] }]);
    expect(await (await fetch(`${base}/nope`)).json()).toEqual({ error: 'not found' });
    expect(await (await raw('/nothing/here')).json()).toEqual({ error: 'not found' });
    // over server.max_body_bytes (1 MiB by default): 413, and the body's code says the same status (AIP-193)
    const huge = await raw('/message:send', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: { role: 'ROLE_USER', parts: [{ text: 'x'.repeat(1024 * 1024) }] } }) });
    expect(huge.status).toBe(413);
    expect(await huge.json()).toMatchObject({ error: { code: 413, status: 'INVALID_ARGUMENT', details: [{ reason: 'INVALID_REQUEST' }] } });
    const bad = await raw('/tasks?statusTimestampAfter=-1');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { details: { reason: string }[] } }).error.details[0]!.reason).toBe('INVALID_PARAMS');
    expect((await raw('/tasks?status=working&pageSize=5')).status).toBe(200);
    const old = await raw('/tasks', { headers: { 'a2a-version': '0.3' } });
    expect(old.status).toBe(400);
    expect(((await old.json()) as { error: { details: { reason: string }[] } }).error.details[0]!.reason).toBe('VERSION_NOT_SUPPORTED');
  });
});
