import { Role, TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import {
  ContentTypeNotSupportedError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hex, startHarness, type Harness } from '../../helpers/bridge-harness.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import type { V03Task } from '../../../src/a2a/wire-v03.js';
import type { ResultOf, V03SendResult } from '../../helpers/rpc-json.js';
import type { PlannedResponse, RecordedRequest } from '../../helpers/webhook-receiver.js';
import {
  appendReply,
  asMessage,
  asTask,
  ctx,
  envelopeOf,
  expectV03Error,
  post,
  rejection,
  rpcBody,
  rpcPost,
  sdkSend,
  sdkTexts,
  sdkV03Client,
  workingOn,
  v03SendParams,
  V03_STATES,
  webhooksFor,
  type RawResult,
  type V03AgentCardJson,
  type WireExchange,
  UUID,
  LABEL,
} from './conformance-helpers.js';
import { unfence } from '../../helpers/agent-text.js';

/**
 * The v0.3 dialect (docs/architecture.md, "Context rules"): `message/send`, `tasks/get` and
 * `tasks/cancel` answered with bare results, `kind` tags and lowercase states, errors without
 * ErrorInfo `data`, the legacy card at `/.well-known/agent.json`. Each test carries the TCK
 * requirement ID it checks, run through the @a2a-js/sdk client on its v0.3 legacy transport
 * (`legacyCompat`, card from the legacy path) and raw JSON-RPC with `A2A-Version: 0.3`.
 */

let dovecot: DovecotHandle;
let h: Harness;
let legacy: Client;
const wire: WireExchange<V03SendResult>[] = [];
let url: string;

/** Webhooks answer at once, except for "SLOW" jobs (1.5 s), so returnImmediately/blocking:false can be seen. */
const respond = (r: RecordedRequest): PlannedResponse => ({
  status: r.verified ? 202 : 401,
  ...(r.envelope?.ask.startsWith('SLOW') ? { delayMs: 1500 } : {}),
});

beforeAll(async () => {
  dovecot = await startDovecot();
  h = await startHarness({ dovecot, respond });
  url = h.endpoint;
  legacy = await sdkV03Client(url, wire);
});
afterAll(async () => {
  await h?.close();
  await dovecot?.stop();
});

/** A raw v0.3 call (`A2A-Version: 0.3`). */
function call<M extends string>(method: M, params?: unknown, headers: Record<string, string | null> = {}): Promise<RawResult<ResultOf<M>>> {
  return rpcPost(url, method, params, { 'a2a-version': '0.3', ...headers });
}

/** Raw message/send of new work; asserts a bare `working` task and returns it. */
async function working(text = `Job ${hex(4)}`, contextId = ctx()): Promise<V03Task> {
  const r = await call('message/send', v03SendParams(text, { contextId }));
  expect(r.json.result, r.text).toMatchObject({ kind: 'task', status: { state: 'working' } });
  return r.json.result as V03Task; // a Task: `kind` was just checked
}

/** A task answered by a genuine reply, then read with tasks/get. */
async function answered(status: 'done' | 'failed' | 'input-required', answer = `Answer ${hex(4)}`): Promise<V03Task> {
  const t = await working();
  await appendReply(h, dovecot, t.id, { status, answer });
  const r = await call('tasks/get', { id: t.id });
  expect(r.json.result!.status.state, r.text).toBe({ done: 'completed', failed: 'failed', 'input-required': 'input-required' }[status]);
  return r.json.result!;
}

/** The last exchange the legacy SDK client made. */
function lastWire(): WireExchange<V03SendResult> {
  const x = wire.at(-1);
  if (!x) throw new Error('the legacy client sent nothing');
  return x;
}

describe('the legacy Agent Card', () => {
  it('CARD-DISC-001 (v0.3) the v0.3 card is served without auth at /.well-known/agent.json (root and agent path); the SDK picks its legacy transport from it', async () => {
    for (const path of ['/.well-known/agent.json', '/agents/grok/.well-known/agent.json']) {
      const res = await fetch(`${h.app.server.baseUrl}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const card = (await res.json()) as Record<string, unknown>;
      expect(card).toMatchObject({ name: 'grok', url, protocolVersion: '0.3.0', preferredTransport: 'JSONRPC' });
      expect(card.supportedInterfaces).toBeUndefined();
    }
    expect(legacy.protocolVersion).toBe('0.3');
    expect(legacy.transport.protocolVersion).toBe('0.3');
    const fromRoot = await sdkV03Client(h.app.server.baseUrl);
    expect(fromRoot.protocolVersion).toBe('0.3');
    const t = asTask(await fromRoot.sendMessage(sdkSend('Found through the root legacy card', { contextId: ctx() })));
    expect(t.status?.state).toBe(TaskState.TASK_STATE_WORKING);
  });

  it('CARD-STRUCT-001 (v0.3) the legacy card has the v0.3 required fields (name, description, url, version, protocolVersion, capabilities, modes, skills) and a bearer scheme', async () => {
    const card = (await (await fetch(`${url}/.well-known/agent.json`)).json()) as V03AgentCardJson;
    for (const k of ['name', 'description', 'url', 'version', 'protocolVersion'] as const) expect(typeof card[k] === 'string' && card[k].length > 0, k).toBe(true);
    expect(card.capabilities).toMatchObject({ streaming: false, pushNotifications: false });
    expect(card.defaultInputModes.length).toBeGreaterThan(0);
    expect(card.defaultOutputModes.length).toBeGreaterThan(0);
    expect(card.skills.length).toBeGreaterThan(0);
    for (const s of card.skills) for (const k of ['id', 'name', 'description'] as const) expect(typeof s[k]).toBe('string');
    expect(card.securitySchemes!.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(card.security).toEqual([{ bearer: [] }]);
    const parsed = await legacy.getAgentCard();
    expect(parsed.supportedInterfaces[0]).toMatchObject({ url, protocolBinding: 'JSONRPC', protocolVersion: '0.3.0' });
  });
});

describe('message/send, tasks/get, tasks/cancel', () => {
  it('CORE-SEND-001 (v0.3) message/send answers a bare Task (kind "task", state "working"), or a bare Message (kind "message") for a poll word on a new context', async () => {
    const c = ctx();
    const t = asTask(await legacy.sendMessage(sdkSend('Survey the RAG papers', { contextId: c })));
    expect(t.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    expect(t.contextId).toBe(c);
    const x = lastWire();
    expect(x.body!.method).toBe('message/send');
    expect(x.headers['a2a-version']).toBe('0.3');
    expect(x.body!.params.message).toMatchObject({ kind: 'message', role: 'user', parts: [{ kind: 'text', text: 'Survey the RAG papers' }] });
    const res = x.response.result;
    expect(res).toMatchObject({ kind: 'task', id: t.id, contextId: c, status: { state: 'working' } });
    expect((res as Record<string, unknown>).task).toBeUndefined();
    expect(res!.status!.message).toMatchObject({ kind: 'message', role: 'agent', parts: [{ kind: 'text' }] });
    expect(res!.history).toEqual([expect.objectContaining({ kind: 'message', role: 'user', parts: [{ kind: 'text', text: 'Survey the RAG papers' }] })]);

    const c2 = ctx();
    const m = asMessage(await legacy.sendMessage(sdkSend('status', { contextId: c2 })));
    expect(m.role).toBe(Role.ROLE_AGENT);
    expect(lastWire().response.result).toMatchObject({ kind: 'message', role: 'agent', contextId: c2, parts: [{ kind: 'text' }] });

    const raw = await call('message/send', v03SendParams('Raw v0.3 job', { contextId: ctx() }));
    expect(raw.json.result).toMatchObject({ kind: 'task', status: { state: 'working' } });
    expect(raw.json.result!.status!.state).not.toMatch(/TASK_STATE/);
  });

  it('CORE-SEND-001 (v0.3) a follow-up on the same context is a poll (product rule): after the reply it returns the completed task with its artifact', async () => {
    const c = ctx();
    const t = asTask(await legacy.sendMessage(sdkSend('Find three papers', { contextId: c })));
    await appendReply(h, dovecot, t.id, { answer: 'A, B, C.' });
    const done = asTask(await legacy.sendMessage(sdkSend('status', { contextId: c })));
    expect(done.id).toBe(t.id);
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(done.artifacts.flatMap((a) => sdkTexts(a.parts)).map(unfence)).toEqual([`${LABEL}\nA, B, C.`]);
    const wired = lastWire().response.result!.artifacts!;
    expect(wired).toEqual([expect.objectContaining({ parts: [{ kind: 'text', text: expect.any(String) as unknown, metadata: expect.objectContaining({ untrusted: true, source: 'agent', agent: 'grok' }) as unknown }] })]);
    expect(unfence((wired[0]!.parts[0] as { text: string }).text)).toBe(`${LABEL}\nA, B, C.`);
    expect(webhooksFor(h, t.id)).toBe(1);
  });

  it('CORE-SEND-002 (v0.3) message/send with the taskId of a completed task and new text is UnsupportedOperationError (-32004, no data); a poll word returns the task', async () => {
    const done = await answered('done');
    const body = rpcBody('message/send', v03SendParams('More work please', { taskId: done.id }));
    expectV03Error(await post(url, body, { 'a2a-version': '0.3' }), body.id, -32004);
    const err = await rejection(() => legacy.sendMessage(sdkSend('More work please', { taskId: done.id, contextId: done.contextId })));
    expect(err).toBeInstanceOf(UnsupportedOperationError);
    expect(err.data).toBeUndefined();
    const again = await call('message/send', v03SendParams('status', { taskId: done.id }));
    expect(again.json.result).toMatchObject({ kind: 'task', id: done.id, status: { state: 'completed' } });
  });

  it('CORE-SEND-003 (v0.3) a file part (bytes or uri) is ContentTypeNotSupportedError (-32005); a data part is carried to the agent', async () => {
    const hooks = h.receiver.requests.length;
    for (const file of [{ bytes: 'dGNr', mimeType: 'application/x-unsupported-tck-type' }, { uri: 'https://example.invalid/f.bin', mimeType: 'application/octet-stream' }]) {
      const body = rpcBody('message/send', { message: { kind: 'message', role: 'user', messageId: hex(16), parts: [{ kind: 'file', file }] } });
      expectV03Error(await post(url, body, { 'a2a-version': '0.3' }), body.id, -32005);
    }
    const req = sdkSend('x', { contextId: ctx() });
    req.message!.parts = [{ content: { $case: 'raw', value: Buffer.from('tck') }, metadata: undefined, filename: 'a.bin', mediaType: 'application/x-unsupported-tck-type' }];
    expect(await rejection(() => legacy.sendMessage(req))).toBeInstanceOf(ContentTypeNotSupportedError);
    expect(lastWire().body!.params.message!.parts[0]!.kind).toBe('file');
    expect(h.receiver.requests.length).toBe(hooks);

    const data = await call('message/send', { message: { kind: 'message', role: 'user', messageId: hex(16), contextId: ctx(), parts: [{ kind: 'data', data: { topic: 'RAG', n: 3 } }] } });
    expect(data.json.result!.status!.state).toBe('working');
    expect(JSON.parse(envelopeOf(h, data.json.result!.id!).ask)).toEqual({ topic: 'RAG', n: 3 });
  });

  it('CORE-GET-001 (v0.3) tasks/get answers the bare task in v0.3 shape: kind tags, lowercase state, text parts with kind', async () => {
    const done = await answered('done', 'The v0.3 answer.');
    const r = await call('tasks/get', { id: done.id });
    expect(r.json.result).toMatchObject({ kind: 'task', id: done.id, contextId: done.contextId, status: { state: 'completed' } });
    expect(r.json.result!.artifacts).toEqual([expect.objectContaining({ artifactId: expect.any(String) as unknown, parts: [expect.objectContaining({ kind: 'text' })] })]);
    expect(unfence((r.json.result!.artifacts[0]!.parts[0] as { text: string }).text)).toBe(`${LABEL}\nThe v0.3 answer.`);
    const got = await legacy.getTask({ tenant: '', id: done.id });
    expect(lastWire().body!.method).toBe('tasks/get');
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(got.artifacts.flatMap((a) => sdkTexts(a.parts)).map(unfence)).toEqual([`${LABEL}\nThe v0.3 answer.`]);
    expect(got.history.map((m) => m.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT]);
  });

  it('CORE-GET-002 (v0.3) tasks/get of an unknown id is TaskNotFoundError (-32001, no data)', async () => {
    const body = rpcBody('tasks/get', { id: randomUUID() });
    expectV03Error(await post(url, body, { 'a2a-version': '0.3' }), body.id, -32001);
    const err = await rejection(() => legacy.getTask({ tenant: '', id: randomUUID() }));
    expect(err).toBeInstanceOf(TaskNotFoundError);
    expect(err.data).toBeUndefined();
  });

  it('CORE-CANCEL-001 (v0.3) tasks/cancel answers the bare task with state "canceled"; again is idempotent (product rule)', async () => {
    const t = asTask(await legacy.sendMessage(sdkSend('To cancel via SDK', { contextId: ctx() })));
    const c = await legacy.cancelTask({ tenant: '', id: t.id, metadata: undefined });
    expect(lastWire().body!.method).toBe('tasks/cancel');
    expect(lastWire().response.result).toMatchObject({ kind: 'task', id: t.id, status: { state: 'canceled' } });
    expect(c.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const w = await working();
    const r = await call('tasks/cancel', { id: w.id });
    expect(r.json.result).toMatchObject({ kind: 'task', id: w.id, status: { state: 'canceled' } });
    expect((await call('tasks/cancel', { id: w.id })).json.result!.status.state).toBe('canceled');
  });

  it('CORE-CANCEL-002 (v0.3) tasks/cancel of a completed task is TaskNotCancelableError (-32002, no data)', async () => {
    const done = await answered('done');
    const body = rpcBody('tasks/cancel', { id: done.id });
    expectV03Error(await post(url, body, { 'a2a-version': '0.3' }), body.id, -32002);
    expect(await rejection(() => legacy.cancelTask({ tenant: '', id: done.id, metadata: undefined }))).toBeInstanceOf(TaskNotCancelableError);
  });

  it('CORE-CANCEL-003 (v0.3) tasks/cancel of an unknown id is TaskNotFoundError (-32001, no data)', async () => {
    const body = rpcBody('tasks/cancel', { id: randomUUID() });
    expectV03Error(await post(url, body, { 'a2a-version': '0.3' }), body.id, -32001);
    expect(await rejection(() => legacy.cancelTask({ tenant: '', id: randomUUID(), metadata: undefined }))).toBeInstanceOf(TaskNotFoundError);
  });
});

describe('v0.3 data model', () => {
  it('DM-TASK-002 (v0.3) states are lowercase v0.3 names, including "input-required" (which the SDK maps to TASK_STATE_INPUT_REQUIRED); answering it opens turn 2', async () => {
    const asking = await answered('input-required', 'Which year?');
    expect(asking.status.state).toBe('input-required');
    expect(asking.status.message).toMatchObject({ kind: 'message', role: 'agent', parts: [{ kind: 'text', metadata: { untrusted: false, source: 'bridge' } }, { kind: 'text', metadata: { untrusted: true } }] });
    expect(unfence((asking.status.message!.parts[1] as { text: string }).text)).toBe(`${LABEL}\nWhich year?`);
    const s = await legacy.getTask({ tenant: '', id: asking.id });
    expect(s.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const answer = asTask(await legacy.sendMessage(sdkSend('2024', { contextId: asking.contextId })));
    expect(answer.id).toBe(asking.id);
    expect(answer.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    expect(envelopeOf(h, asking.id)).toMatchObject({ turn: 2, ask: '2024' });

    const failed = await answered('failed', 'Broken.');
    const states = new Set<string>([asking.status.state, failed.status.state, 'working']);
    for (const t of [(await working()).id, asking.id, failed.id]) states.add((await call('tasks/get', { id: t })).json.result!.status.state);
    for (const st of states) expect(V03_STATES).toContain(st);
    expect([...states].sort()).toEqual(['failed', 'input-required', 'working']);
  });

  it('DM-MSG-002 (v0.3) roles are "user" and "agent"; every task, message and part carries its kind tag (DM-PART-001)', async () => {
    const t = await answered('done', 'Tagged.');
    const r = (await call('tasks/get', { id: t.id })).json.result;
    const messages = [...r!.history, ...(r!.status.message ? [r!.status.message] : [])];
    expect(messages.map((m: { role: string }) => m.role)).toEqual(['user', 'agent']);
    for (const m of messages) expect(m.kind).toBe('message');
    const parts = [...messages.flatMap((m) => m.parts), ...r!.artifacts.flatMap((a) => a.parts)];
    expect(parts.length).toBeGreaterThanOrEqual(3);
    for (const p of parts) expect(['text', 'file', 'data']).toContain(p.kind);
  });

  it('CORE-HIST-001 (v0.3) tasks/get with historyLength 0 returns no history; 1 returns the newest message', async () => {
    const t = await answered('done', 'History answer.');
    expect((await call('tasks/get', { id: t.id, historyLength: 0 })).json.result!.history).toEqual([]);
    const one = (await call('tasks/get', { id: t.id, historyLength: 1 })).json.result!.history;
    expect(one).toEqual([expect.objectContaining({ role: 'agent', parts: [expect.objectContaining({ kind: 'text' })] })]);
    expect(unfence((one[0]!.parts[0] as { text: string }).text)).toBe(`${LABEL}\nHistory answer.`);
    expect((await legacy.getTask({ tenant: '', id: t.id, historyLength: 0 })).history).toEqual([]);
    expect(lastWire().body!.params).toEqual({ id: t.id, historyLength: 0 });
  });

  it('CORE-MULTI-001 (v0.3) / CORE-MULTI-002 (v0.3) a missing contextId is generated and returned; a given one is kept', async () => {
    const gen = await call('message/send', v03SendParams('No context'));
    expect(gen.json.result!.contextId).toMatch(UUID);
    const msg = await call('message/send', v03SendParams('status'));
    expect(msg.json.error).toMatchObject({ code: -32602 });
    const named = `tck-v03-${hex(4)}`;
    const noTask = await call('message/send', v03SendParams('status', { contextId: named }));
    expect(noTask.json.result).toMatchObject({ kind: 'message', contextId: named });
    const c = `tck-v03-${hex(4)}`;
    const kept = asTask(await legacy.sendMessage(sdkSend('Keep my context', { contextId: c })));
    expect(kept.contextId).toBe(c);
    expect(lastWire().response.result!.contextId).toBe(c);
  });
});

describe('v0.3 execution mode, capabilities, errors, versions', () => {
  it('CORE-EXECUTION-MODE-001 (v0.3, product rule) blocking: true (the SDK default) answers "working" once the webhook accepted the job', async () => {
    const n = h.receiver.requests.length;
    const t = asTask(await legacy.sendMessage(sdkSend('Blocking v0.3 job', { contextId: ctx() })));
    expect(lastWire().body!.params.configuration!.blocking).toBe(true);
    expect(t.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    expect(h.receiver.requests.length).toBe(n + 1);
  });

  it('CORE-EXECUTION-MODE-002 (v0.3) blocking: false answers "submitted" before the webhook attempt finishes', async () => {
    const n = h.receiver.requests.length;
    const c = ctx();
    const accepted = workingOn(h, c);
    const r = await call('message/send', { ...v03SendParams('SLOW v0.3 job', { contextId: c }), configuration: { blocking: false } });
    const answeredAt = Date.now();
    expect(r.json.result).toMatchObject({ kind: 'task', status: { state: 'submitted' } });
    const [req] = (await h.receiver.waitForRequests(n + 1)).slice(n);
    expect(req!.envelope!.task_id).toBe(r.json.result!.id);
    await accepted;
    // The caller had its answer before the receiver answered the attempt.
    expect(answeredAt).toBeLessThan(req!.answeredAt!);

    const c2 = ctx();
    const accepted2 = workingOn(h, c2);
    const s = asTask(await legacy.sendMessage(sdkSend('SLOW v0.3 job via SDK', { contextId: c2, returnImmediately: true })));
    const sdkAnsweredAt = Date.now();
    expect(lastWire().body!.params.configuration!.blocking).toBe(false);
    expect(s.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    // after the webhook's 202 the task is WORKING
    await accepted2;
    expect(sdkAnsweredAt).toBeLessThan(h.receiver.requests.find((q) => q.envelope?.task_id === s.id)!.answeredAt!);
    expect((await call('tasks/get', { id: s.id })).json.result!.status.state).toBe('working');
  });

  it('CORE-CAP-001 (v0.3) every tasks/pushNotificationConfig/* method is PushNotificationNotSupportedError (-32003, no data)', async () => {
    const t = await working();
    for (const [m, p] of [
      ['tasks/pushNotificationConfig/set', { taskId: t.id, pushNotificationConfig: { url: 'https://example.invalid/push' } }],
      ['tasks/pushNotificationConfig/get', { id: t.id }],
      ['tasks/pushNotificationConfig/list', { id: t.id }],
      ['tasks/pushNotificationConfig/delete', { id: t.id, pushNotificationConfigId: 'c' }],
    ] as const) {
      const body = rpcBody(m, p);
      expectV03Error(await post(url, body, { 'a2a-version': '0.3' }), body.id, -32003);
    }
    const err = await rejection(() =>
      legacy.transport.createTaskPushNotificationConfig(
        { tenant: '', id: 'c', taskId: t.id, url: 'https://example.invalid/push', token: '', authentication: undefined },
        { serviceParameters: { 'A2A-Version': '0.3' } },
      ),
    );
    expect(err).toBeInstanceOf(PushNotificationNotSupportedError);
    expect(lastWire().body!.method).toBe('tasks/pushNotificationConfig/set');
  });

  it('CORE-CAP-002 (v0.3) message/stream and tasks/resubscribe are UnsupportedOperationError (-32004, no data), and start nothing', async () => {
    const t = await working();
    const hooks = h.receiver.requests.length;
    const c = ctx();
    const s = rpcBody('message/stream', v03SendParams('stream me', { contextId: c }));
    expectV03Error(await post(url, s, { 'a2a-version': '0.3', accept: 'text/event-stream' }), s.id, -32004);
    const re = rpcBody('tasks/resubscribe', { id: t.id });
    expectV03Error(await post(url, re, { 'a2a-version': '0.3' }), re.id, -32004);
    const err = await rejection(async () => {
      for await (const _ of legacy.resubscribeTask({ tenant: '', id: t.id })) void _;
    });
    expect(err).toBeInstanceOf(UnsupportedOperationError);
    expect(lastWire().body!.method).toBe('tasks/resubscribe');
    expect(h.receiver.requests.length).toBe(hooks);
  });

  it('CORE-CAP-003 (v0.3) agent/getAuthenticatedExtendedCard is UnsupportedOperationError (-32004, no data)', async () => {
    const body = rpcBody('agent/getAuthenticatedExtendedCard');
    expectV03Error(await post(url, body, { 'a2a-version': '0.3' }), body.id, -32004);
    const err = await rejection(() => legacy.transport.getExtendedAgentCard({ tenant: '' }, { serviceParameters: { 'A2A-Version': '0.3' } }));
    expect(err).toBeInstanceOf(UnsupportedOperationError);
    expect(lastWire().body!.method).toBe('agent/getAuthenticatedExtendedCard');
  });

  it('JSONRPC-ERR-001 (v0.3) v0.3 errors are JSON-RPC error objects with code and message and no ErrorInfo data', async () => {
    const badRole = rpcBody('message/send', { message: { kind: 'message', role: 'ROLE_USER', messageId: hex(16), parts: [{ kind: 'text', text: 'x' }] } });
    const r1 = await post(url, badRole, { 'a2a-version': '0.3' });
    expectV03Error(r1, badRole.id, -32602);
    expect(r1.json.error!.message).toMatch(/role/);
    const noId = rpcBody('tasks/get', {});
    expectV03Error(await post(url, noId, { 'a2a-version': '0.3' }), noId.id, -32602);
    expectV03Error(await post(url, '{nope', { 'a2a-version': '0.3' }), null, -32700);
    const unknown = rpcBody('tasks/list', {});
    expectV03Error(await post(url, unknown, { 'a2a-version': '0.3' }), unknown.id, -32601);
    const empty = sdkSend('x', { contextId: ctx() });
    empty.message!.parts = [];
    const err = await rejection(() => legacy.sendMessage(empty));
    expect(err).toBeInstanceOf(RequestMalformedError);
  });

  it('VER-SERVER-003 (v0.3) with no A2A-Version (or an empty one) message/send is answered in v0.3; the SDK legacy client sends 0.3', async () => {
    for (const header of [{ 'a2a-version': null }, { 'a2a-version': '' }]) {
      const r = await call('message/send', v03SendParams('versionless', { contextId: ctx() }), header);
      expect(r.json.result, r.text).toMatchObject({ kind: 'task', status: { state: 'working' } });
      const g = await call('tasks/get', { id: r.json.result!.id }, header);
      expect(g.json.result).toMatchObject({ kind: 'task', id: r.json.result!.id });
    }
    for (const x of wire.filter((w) => w.method === 'POST')) expect(x.headers['a2a-version']).toBe('0.3');
  });

  it('VER-SERVER-002 (v0.3) an unsupported A2A-Version on message/send is VersionNotSupportedError (-32009, HTTP 200, no data)', async () => {
    const hooks = h.receiver.requests.length;
    for (const v of ['2.0', '0.2']) {
      const body = rpcBody('message/send', v03SendParams('versioned', { contextId: ctx() }));
      expectV03Error(await post(url, body, { 'a2a-version': v }), body.id, -32009);
    }
    expect(h.receiver.requests.length).toBe(hooks);
  });
});
