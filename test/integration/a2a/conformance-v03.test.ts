/**
 * The v0.3 dialect (docs/architecture.md, "Context rules"): the legacy card at
 * `/.well-known/agent.json`, and `message/send`, `tasks/get` and `tasks/cancel` answered with bare
 * results, `kind` tags and lowercase states, errors without ErrorInfo `data`. Each test carries the
 * TCK requirement ID it checks, run through the @a2a-js/sdk client on its v0.3 legacy transport
 * (`legacyCompat`, card from the legacy path) and raw JSON-RPC with `A2A-Version: 0.3`. The v0.3
 * data model, execution mode, capabilities, errors and versions are in
 * conformance-v03-model.test.ts.
 */
import { Role, TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { ContentTypeNotSupportedError, TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hex, type Harness } from '../../helpers/bridge-harness.js';
import type { DovecotHandle } from '../../helpers/dovecot.js';
import type { V03SendResult } from '../../helpers/rpc-json.js';
import {
  appendReply, asMessage, asTask, ctx, envelopeOf, expectV03Error, post, rejection, rpcBody,
  sdkSend, sdkTexts, sdkV03Client, v03SendParams, webhooksFor, type V03AgentCardJson,
  type WireExchange, LABEL,
} from './conformance-helpers.js';
import { unfence } from '../../helpers/agent-text.js';
import { useConformanceBridge, v03Calls, v03Respond as respond } from './conformance-calls.js';

let dovecot: DovecotHandle;
let h: Harness;
let legacy: Client;
const wire: WireExchange<V03SendResult>[] = [];
let url: string;

useConformanceBridge({ respond }, async (b) => {
  ({ dovecot, h } = b);
  url = h.endpoint;
  legacy = await sdkV03Client(url, wire);
});

const { call, working, answered, lastWire } = v03Calls(() => ({ dovecot, h, url }), wire);

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
    expect(card.capabilities).toMatchObject({ streaming: true, pushNotifications: true });
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

  it('CORE-CANCEL-001 (v0.3) tasks/cancel answers the bare task with state "canceled"; again is TaskNotCancelableError', async () => {
    const t = asTask(await legacy.sendMessage(sdkSend('To cancel via SDK', { contextId: ctx() })));
    const c = await legacy.cancelTask({ tenant: '', id: t.id, metadata: undefined });
    expect(lastWire().body!.method).toBe('tasks/cancel');
    expect(lastWire().response.result).toMatchObject({ kind: 'task', id: t.id, status: { state: 'canceled' } });
    expect(c.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const w = await working();
    const r = await call('tasks/cancel', { id: w.id });
    expect(r.json.result).toMatchObject({ kind: 'task', id: w.id, status: { state: 'canceled' } });
    expect((await call('tasks/cancel', { id: w.id })).json.error!.code).toBe(-32002);
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
