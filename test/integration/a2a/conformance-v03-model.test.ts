/**
 * The v0.3 dialect (docs/architecture.md, "Context rules"): its data model (`kind` tags, lowercase
 * states, the shapes of tasks, messages and artifacts), execution mode, capabilities, errors and
 * versions. Each test carries the TCK requirement ID it checks, run through the @a2a-js/sdk client
 * on its v0.3 legacy transport (`legacyCompat`, card from the legacy path) and raw JSON-RPC with
 * `A2A-Version: 0.3`. The legacy card and the methods are in conformance-v03.test.ts.
 */
import { TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { RequestMalformedError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { describe, expect, it } from 'vitest';
import { hex, type Harness } from '../../helpers/bridge-harness.js';
import type { DovecotHandle } from '../../helpers/dovecot.js';
import type { V03SendResult } from '../../helpers/rpc-json.js';
import {
  asTask, ctx, envelopeOf, expectV03Error, post, rejection, rpcBody, sdkSend, sdkV03Client,
  workingOn, v03SendParams, V03_STATES, type WireExchange, UUID, LABEL,
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

  it('CORE-CAP-001 (v0.3) the tasks/pushNotificationConfig/* methods answer v0.3 shapes; the SDK v0.3 transport sets a config', async () => {
    const t = await working();
    const set = await call('tasks/pushNotificationConfig/set', { taskId: t.id, pushNotificationConfig: { id: 'c', url: 'http://127.0.0.1:9/push', token: 'tk' } });
    expect(set.json.result).toEqual({ taskId: t.id, pushNotificationConfig: { id: 'c', url: 'http://127.0.0.1:9/push', token: 'tk' } });
    expect((await call('tasks/pushNotificationConfig/get', { id: t.id, pushNotificationConfigId: 'c' })).json.result).toEqual(set.json.result);
    expect((await call('tasks/pushNotificationConfig/list', { id: t.id })).json.result).toEqual([set.json.result]);
    expect((await call('tasks/pushNotificationConfig/delete', { id: t.id, pushNotificationConfigId: 'c' })).json.result).toBeNull();
    const gone = rpcBody('tasks/pushNotificationConfig/get', { id: t.id, pushNotificationConfigId: 'c' });
    expectV03Error(await post(url, gone, { 'a2a-version': '0.3' }), gone.id, -32001);
    const created = await legacy.transport.createTaskPushNotificationConfig(
      { tenant: '', id: 'd', taskId: t.id, url: 'http://127.0.0.1:9/push', token: '', authentication: undefined },
      { serviceParameters: { 'A2A-Version': '0.3' } },
    );
    expect(created.id).toBe('d');
    expect(lastWire().body!.method).toBe('tasks/pushNotificationConfig/set');
  });

  it('CORE-CAP-002 (v0.3) message/stream streams v0.3 events (the Task, then status-update with final) and ends after the wait budget', async () => {
    const c = ctx();
    const s = rpcBody('message/stream', v03SendParams('stream me', { contextId: c }));
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${h.configDir.bearer}`, 'a2a-version': '0.3' }, body: JSON.stringify(s) });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await res.text())
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)) as { id: unknown; result: { kind: string; final?: boolean; status: { state: string } } });
    expect(events.map((e) => [e.id, e.result.kind, e.result.status.state, e.result.final])).toEqual([
      [s.id, 'task', 'submitted', undefined],
      [s.id, 'status-update', 'working', false],
    ]);
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
