/**
 * The A2A conformance kit's (TCK, `tck/requirements/core_operations.py`) CORE-ERR, CORE-CAP, CORE-
 * MULTI and CORE-EXECUTION-MODE requirements (errors, capabilities, multi-turn contextId/taskId,
 * blocking and returnImmediately) that apply to a JSON-RPC server; the rest of CORE-* is in the
 * other conformance-core-*.test.ts files. Through the @a2a-js/sdk v1.0 client and raw JSON-RPC (the
 * v0.3 dialect is in conformance-v03*.test.ts). Real parts: Dovecot, a loopback webhook receiver,
 * signed DKIM replies.
 *
 * Where the product deliberately differs from the letter of a requirement (a SendMessage never
 * blocks for the whole job; a follow-up on an open context is a poll), the test asserts the
 * documented behaviour and says so.
 */
import { TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { RequestMalformedError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hex, startHarness, type Harness } from '../../helpers/bridge-harness.js';
import type { DovecotHandle } from '../../helpers/dovecot.js';
import type { PlannedResponse, RecordedRequest } from '../../helpers/webhook-receiver.js';
import {
  asMessage, asTask, ctx, envelopeOf, errorInfo, expectV1Error, post, rejection, rpcBody, rpcPost,
  sdkSend, sdkTexts, sdkV1Client, workingOn, v1SendParams, webhooksFor, type WireExchange, UUID,
  LABEL,
} from './conformance-helpers.js';
import { unfence } from '../../helpers/agent-text.js';
import { useConformanceBridge, coreCalls } from './conformance-calls.js';

let dovecot: DovecotHandle;
let h: Harness;
let sdk: Client;
const wire: WireExchange[] = [];
let grok: string;

useConformanceBridge({ secondAgent: true }, async (b) => {
  ({ dovecot, h } = b);
  grok = h.endpoint;
  sdk = await sdkV1Client(grok, wire);
});

const { call, working, answered } = coreCalls(() => ({ dovecot, h, url: grok }));

describe('errors and capabilities (TCK §3.3)', () => {
  it('CORE-ERR-001 errors carry a code, an actionable message naming the problem, and ErrorInfo; the SDK surfaces the same message', async () => {
    const noId = rpcBody('SendMessage', { message: { role: 'ROLE_USER', parts: [{ text: 'x' }] } });
    const r1 = await post(grok, noId);
    expectV1Error(r1, noId.id, -32602, 'INVALID_PARAMS');
    expect(r1.json.error!.message).toMatch(/messageId/);

    const id = randomUUID();
    const r2 = await call('GetTask', { id });
    expect(r2.json.error!.message).toContain(id);
    const err = await rejection(() => sdk.getTask({ tenant: '', id }));
    expect(err.message).toBe(r2.json.error!.message);

    const unknown = rpcBody('SendMessageNow', {});
    const r3 = await post(grok, unknown);
    expectV1Error(r3, unknown.id, -32601, 'METHOD_NOT_FOUND');
    expect(r3.json.error!.message).toContain('SendMessageNow');

    const r4 = await rpcPost(grok, 'GetTask', { id }, { 'a2a-version': '7.0' });
    expect(r4.json.error!.message).toMatch(/7\.0/);
    expect(r4.json.error!.message).toMatch(/1\.0/);
  });

  it('CORE-ERR-002 every invalid parameter is refused with -32602 before anything is stored or dispatched', async () => {
    const hooks = h.receiver.requests.length;
    const listed = (await call('ListTasks', {})).json.result!.totalSize;
    const msg = (over: Record<string, unknown>) => ({ message: { role: 'ROLE_USER', parts: [{ text: 'valid text' }], messageId: hex(16), contextId: ctx(), ...over } });
    const cases: [string, unknown][] = [
      ['SendMessage', {}],
      ['SendMessage', []],
      ['SendMessage', msg({ messageId: undefined })],
      ['SendMessage', msg({ messageId: 42 })],
      ['SendMessage', msg({ parts: [] })],
      ['SendMessage', msg({ parts: undefined })],
      ['SendMessage', msg({ parts: 'text' })],
      ['SendMessage', msg({ role: 'ROLE_AGENT' })],
      ['SendMessage', msg({ role: undefined })],
      ['SendMessage', msg({ parts: [{ mediaType: 'text/plain' }] })],
      ['SendMessage', msg({ parts: [{ text: 'a', data: { b: 1 } }] })],
      ['SendMessage', msg({ contextId: '' })],
      ['SendMessage', msg({ taskId: 7 })],
      ['SendMessage', { ...msg({}), configuration: { historyLength: -1 } }],
      ['SendMessage', { ...msg({}), configuration: { returnImmediately: 'yes' } }],
      ['SendMessage', { ...msg({}), metadata: { deadline_s: 1 } }],
      ['GetTask', {}],
      ['GetTask', { id: 5 }],
      ['GetTask', { id: randomUUID(), historyLength: 'all' }],
      ['CancelTask', {}],
      ['ListTasks', { pageSize: 'ten' }],
      ['ListTasks', { status: 'WORKING' }],
      ['ListTasks', { statusTimestampAfter: 'yesterday' }],
      ['ListTasks', { statusTimestampAfter: '-1' }],
      ['ListTasks', { statusTimestampAfter: '2026-01-31' }],
      ['ListTasks', { includeArtifacts: 'yes' }],
    ];
    for (const [method, params] of cases) {
      const body = rpcBody(method, params);
      const r = await post(grok, body);
      expect(r.json?.error?.code, `${method} ${JSON.stringify(params)} → ${r.text}`).toBe(-32602);
      expectV1Error(r, body.id, -32602, 'INVALID_PARAMS');
    }
    // SDK v1.0: the same refusals surface as RequestMalformedError
    const noParts = sdkSend('x', { contextId: ctx() });
    noParts.message!.parts = [];
    expect(await rejection(() => sdk.sendMessage(noParts))).toBeInstanceOf(RequestMalformedError);
    expect(await rejection(() => sdk.getTask({ tenant: '', id: '' }))).toBeInstanceOf(RequestMalformedError);

    expect(h.receiver.requests.length).toBe(hooks);
    expect((await call('ListTasks', {})).json.result!.totalSize).toBe(listed);
  });

  it('CORE-CAP-001 with capabilities.pushNotifications true, the push config operations work (push.test.ts has delivery)', async () => {
    const card = (await (await fetch(`${grok}/.well-known/agent-card.json`, { headers: { 'a2a-version': '1.0' } })).json()) as { capabilities: Record<string, boolean> };
    expect(card.capabilities.pushNotifications).toBe(true);
    const t = await working();
    const created = await sdk.createTaskPushNotificationConfig({ tenant: '', id: 'cfg-1', taskId: t.id, url: 'http://127.0.0.1:9/push', token: '', authentication: undefined });
    expect(created.id).toBe('cfg-1');
    expect((await call('ListTaskPushNotificationConfigs', { taskId: t.id })).json.result).toEqual({ configs: [{ id: 'cfg-1', taskId: t.id, url: 'http://127.0.0.1:9/push' }], nextPageToken: '' });
    expect((await call('DeleteTaskPushNotificationConfig', { taskId: t.id, id: 'cfg-1' })).json.result).toEqual({});
  });

  it('CORE-CAP-002 with capabilities.streaming true, the SDK streams (streaming.test.ts has the whole lifecycle); SubscribeToTask of a finished task is UnsupportedOperationError', async () => {
    const card = (await (await fetch(`${grok}/.well-known/agent-card.json`, { headers: { 'a2a-version': '1.0' } })).json()) as { capabilities: Record<string, boolean> };
    expect(card.capabilities.streaming).toBe(true);
    const before = wire.length;
    const events = [];
    for await (const e of sdk.sendMessageStream(sdkSend('streamed', { contextId: ctx() }))) {
      events.push(e);
      break;
    }
    expect(events[0]!.payload?.$case).toBe('task');
    expect(wire.slice(before).map((x) => x.body?.method)).toEqual(['SendStreamingMessage']);
    const done = await answered('done');
    const sub = rpcBody('SubscribeToTask', { id: done.id });
    expectV1Error(await post(grok, sub), sub.id, -32004, 'UNSUPPORTED_OPERATION');
    const err = await rejection(async () => {
      for await (const _ of sdk.resubscribeTask({ tenant: '', id: done.id })) void _;
    });
    expect(err).toBeInstanceOf(UnsupportedOperationError);
  });

  it('CORE-CAP-003 with capabilities.extendedAgentCard false, GetExtendedAgentCard is UnsupportedOperationError', async () => {
    const card = (await (await fetch(`${grok}/.well-known/agent-card.json`, { headers: { 'a2a-version': '1.0' } })).json()) as { capabilities: Record<string, boolean> };
    expect(card.capabilities.extendedAgentCard).toBe(false);
    const body = rpcBody('GetExtendedAgentCard', {});
    expectV1Error(await post(grok, body), body.id, -32004, 'UNSUPPORTED_OPERATION');
    const err = await rejection(() => sdk.transport.getExtendedAgentCard({ tenant: '' }, { serviceParameters: { 'A2A-Version': '1.0' } }));
    expect(err).toBeInstanceOf(UnsupportedOperationError);
    expect(err.data).toEqual(errorInfo('UNSUPPORTED_OPERATION'));
    expect(wire.at(-1)!.body!.method).toBe('GetExtendedAgentCard');
    // The SDK client itself does not ask for it, since the card says false.
    const before = wire.length;
    expect((await sdk.getAgentCard()).name).toBe('grok');
    expect(wire.length).toBe(before);
  });
});

describe('multi-turn: contextId and taskId (TCK §3.4)', () => {
  it('CORE-MULTI-001 a message without contextId gets a server-generated one (a new one per task)', async () => {
    const a = asTask(await sdk.sendMessage(sdkSend('No context given')));
    const b = await call('SendMessage', v1SendParams('No context either'));
    expect(a.contextId).toMatch(UUID);
    expect(b.json.result!.task!.contextId).toMatch(UUID);
    expect(a.contextId).not.toBe(b.json.result!.task!.contextId);
    // the generated context works for the follow-up (a poll on the open task)
    const again = await call('SendMessage', v1SendParams('status', { contextId: a.contextId }));
    expect(again.json.result!.task!.id).toBe(a.id);
  });

  it('CORE-MULTI-001a a generated contextId is in the response; a status poll that names no context is refused rather than answered on an invented one (product rule)', async () => {
    const r = await call('SendMessage', v1SendParams('Fresh job'));
    expect(r.json.result!.task!.contextId).toMatch(UUID);
    expect(r.json.result!.task!.status.message!.contextId).toBe(r.json.result!.task!.contextId);
    const m = await call('SendMessage', v1SendParams('status'));
    expect(m.json.error).toMatchObject({ code: -32602, message: expect.stringContaining('no contextId names the task to check') as unknown });
    const named = ctx();
    const sm = asMessage(await sdk.sendMessage(sdkSend('?', { contextId: named })));
    expect(sm.contextId).toBe(named);
  });

  it('CORE-MULTI-002 a client-provided contextId is kept exactly, in the task, its status message and its history', async () => {
    const odd = `tck-client-context/${hex(4)} ü+%20:`;
    const r = await call('SendMessage', v1SendParams('Keep my context', { contextId: odd }));
    const t = r.json.result!.task;
    expect(t!.contextId).toBe(odd);
    expect(t!.status.message!.contextId).toBe(odd);
    expect(t!.history.map((m: { contextId: string }) => m.contextId)).toEqual([odd]);
    const c = ctx();
    const s = asTask(await sdk.sendMessage(sdkSend('Keep mine too', { contextId: c })));
    expect(s.contextId).toBe(c);
    expect((await sdk.getTask({ tenant: '', id: s.id })).contextId).toBe(c);
  });

  it('CORE-MULTI-002a a contextId the agent cannot accept (over 256 characters, not a string) is refused with an error, and no context is generated', async () => {
    const hooks = h.receiver.requests.length;
    for (const contextId of ['c'.repeat(257), 12345]) {
      const body = rpcBody('SendMessage', { message: { role: 'ROLE_USER', parts: [{ text: 'job' }], messageId: hex(16), contextId } });
      const r = await post(grok, body);
      expectV1Error(r, body.id, -32602, 'INVALID_PARAMS');
    }
    const err = await rejection(() => sdk.sendMessage(sdkSend('job', { contextId: 'c'.repeat(300) })));
    expect(err).toBeInstanceOf(RequestMalformedError);
    expect(h.receiver.requests.length).toBe(hooks);
  });

  it('CORE-MULTI-003 every new task gets a unique server-generated taskId; a replayed messageId returns the same task (product rule)', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await working(`Unique ${i}`)).id);
    ids.push(asTask(await sdk.sendMessage(sdkSend('Unique via SDK', { contextId: ctx() }))).id);
    // a new task on a context whose task is terminal gets a new id too
    const c = ctx();
    const first = await working('First on context', { contextId: c });
    await call('CancelTask', { id: first.id });
    const second = await working('Second on context', { contextId: c });
    ids.push(first.id, second.id);
    for (const id of ids) expect(id).toMatch(UUID);
    expect(new Set(ids).size).toBe(ids.length);

    const messageId = hex(16);
    const params = v1SendParams('Replayed job', { contextId: ctx(), messageId });
    const once = await call('SendMessage', params);
    const twice = await call('SendMessage', params);
    expect(twice.json.result!.task!.id).toBe(once.json.result!.task!.id);
    // the same messageId with other content is refused (docs/architecture.md, "Context rules"), never a second task
    const reused = rpcBody('SendMessage', v1SendParams('Different text, same messageId', { contextId: ctx(), messageId }));
    expectV1Error(await post(grok, reused), reused.id, -32602, 'INVALID_PARAMS');
    expect(webhooksFor(h, once.json.result!.task!.id)).toBe(1);
  });

  it('CORE-MULTI-004 a message whose taskId names no task is TaskNotFoundError, and nothing is dispatched', async () => {
    const hooks = h.receiver.requests.length;
    const body = rpcBody('SendMessage', v1SendParams('Message to invalid task', { taskId: 'tck-nonexistent-task' }));
    expectV1Error(await post(grok, body), body.id, -32001, 'TASK_NOT_FOUND');
    const err = await rejection(() => sdk.sendMessage(sdkSend('Message to invalid task', { taskId: randomUUID(), contextId: ctx() })));
    expect(err).toBeInstanceOf(TaskNotFoundError);
    expect(h.receiver.requests.length).toBe(hooks);
  });

  it('CORE-MULTI-005 with only a taskId, the contextId is inferred from the task (a poll on an open task, an answer to INPUT_REQUIRED)', async () => {
    const open = await working();
    const r = await call('SendMessage', v1SendParams('status', { taskId: open.id }));
    expect(r.json.result!.task).toMatchObject({ id: open.id, contextId: open.contextId });
    const s = asTask(await sdk.sendMessage(sdkSend('any news?', { taskId: open.id })));
    expect(s.contextId).toBe(open.contextId);
    expect(webhooksFor(h, open.id)).toBe(1);

    const asking = await answered('input-required', 'Which year?');
    const answer = await call('SendMessage', v1SendParams('2024', { taskId: asking.id }));
    expect(answer.json.result!.task).toMatchObject({ id: asking.id, contextId: asking.contextId, status: { state: 'TASK_STATE_WORKING' } });
    expect(envelopeOf(h, asking.id)).toMatchObject({ turn: 2, ask: '2024' });
  });

  it('CORE-MULTI-006 a taskId with the contextId of another context is refused, and nothing is dispatched', async () => {
    const t = await working();
    const hooks = h.receiver.requests.length;
    const body = rpcBody('SendMessage', v1SendParams('Mismatched context', { taskId: t.id, contextId: ctx() }));
    expectV1Error(await post(grok, body), body.id, -32602, 'INVALID_PARAMS');
    const err = await rejection(() => sdk.sendMessage(sdkSend('Mismatched context', { taskId: t.id, contextId: ctx() })));
    expect(err).toBeInstanceOf(RequestMalformedError);
    expect(h.receiver.requests.length).toBe(hooks);
    expect((await call('GetTask', { id: t.id })).json.result!.contextId).toBe(t.contextId);
  });
});

describe('execution mode (TCK §3.2.2)', () => {
  it('CORE-EXECUTION-MODE-001 (product rule, default wait_budget_s = 0) a blocking SendMessage answers once the first webhook attempt has an outcome: WORKING, webhook already accepted', async () => {
    const hooks = h.receiver.requests.length;
    const c = ctx();
    const t = asTask(await sdk.sendMessage(sdkSend('Blocking by default', { contextId: c })));
    expect(wire.at(-1)!.body!.params.configuration?.returnImmediately).toBeUndefined();
    expect(t.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    expect(h.receiver.requests.length).toBe(hooks + 1);
    const raw = await call('SendMessage', { ...v1SendParams('Blocking, said so', { contextId: ctx() }), configuration: { returnImmediately: false } });
    expect(raw.json.result!.task!.status.state).toBe('TASK_STATE_WORKING');
    expect(h.receiver.requests.length).toBe(hooks + 2);
  });

  describe('with wait_budget_s = 4 and webhooks that answer after 1 s (1.5 s for "SLOW" jobs)', () => {
    let hb: Harness;
    let sdkB: Client;
    const delays = (r: RecordedRequest): PlannedResponse => ({
      status: r.verified ? 202 : 401,
      delayMs: r.envelope?.ask.startsWith('SLOW') ? 1500 : 1000,
    });

    beforeAll(async () => {
      hb = await startHarness({ dovecot, serverToml: 'wait_budget_s = 4\ncaller_timeout_s = 60', respond: delays });
      sdkB = await sdkV1Client(hb.endpoint);
    });
    afterAll(async () => {
      await hb?.close();
    });

    /** Starts `start`, waits for its webhook, appends the reply, and awaits the call. */
    async function replyDuringCall<T>(start: () => Promise<T>, status: 'done' | 'input-required', answer: string): Promise<{ result: T; ms: number }> {
      const n = hb.receiver.requests.length;
      const t0 = performance.now();
      const pending = start();
      const [req] = (await hb.receiver.waitForRequests(n + 1)).slice(n);
      await dovecot.append(await hb.reply(req!.envelope!, { status, answer }));
      const result = await pending;
      return { result, ms: performance.now() - t0 };
    }

    it('CORE-EXECUTION-MODE-001 (product rule, wait budget) a reply that lands during a blocking SendMessage makes that call answer COMPLETED, before the budget runs out', async () => {
      const { result, ms } = await replyDuringCall(() => sdkB.sendMessage(sdkSend('Quick job', { contextId: ctx() })), 'done', 'Done quickly.');
      const t = asTask(result);
      expect(t.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(t.artifacts.flatMap((a) => sdkTexts(a.parts)).map(unfence)).toEqual([`${LABEL}\nDone quickly.`]);
      // 1 s webhook + at most 4 s budget; returning early means well under 5 s.
      expect(ms).toBeLessThan(4500);
    });

    it('CORE-EXECUTION-MODE-001 (product rule, wait budget) an INPUT_REQUIRED reply during a blocking SendMessage is an interrupted state: the call answers it early', async () => {
      const { result, ms } = await replyDuringCall(
        () => rpcPost(hb.endpoint, 'SendMessage', v1SendParams('Ambiguous job', { contextId: ctx() })),
        'input-required',
        'Which one?',
      );
      expect(result.json.result!.task!.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
      expect(unfence(result.json.result!.task!.status.message!.parts[1]!.text)).toBe(`${LABEL}\nWhich one?`);
      expect(ms).toBeLessThan(4500);
    });

    it('CORE-EXECUTION-MODE-001 (product rule, wait budget) without a reply, a blocking SendMessage waits the budget and answers WORKING, below the caller timeout', async () => {
      const r = await rpcPost(hb.endpoint, 'SendMessage', v1SendParams('Long job', { contextId: ctx() }));
      expect(r.json.result!.task!.status.state).toBe('TASK_STATE_WORKING');
      expect(r.ms).toBeGreaterThanOrEqual(1000 + 4000 - 100);
      expect(r.ms).toBeLessThan(1000 + 4000 + 2500);
    });

    it('CORE-EXECUTION-MODE-002 returnImmediately: true answers SUBMITTED before the webhook attempt has finished; the attempt completes in the background', async () => {
      const n = hb.receiver.requests.length;
      const c = ctx();
      const accepted = workingOn(hb, c);
      const r = await rpcPost(hb.endpoint, 'SendMessage', { ...v1SendParams('SLOW job', { contextId: c }), configuration: { returnImmediately: true } });
      const answeredAt = Date.now();
      expect(r.json.result!.task!.status.state).toBe('TASK_STATE_SUBMITTED');
      expect(r.json.result!.task!.contextId).toBe(c);
      const [req] = (await hb.receiver.waitForRequests(n + 1)).slice(n);
      expect(req!.envelope!.task_id).toBe(r.json.result!.task!.id);
      // after the webhook's 202 the task is WORKING
      expect((await accepted).task.id).toBe(r.json.result!.task!.id);
      // The caller had its answer before the receiver answered the attempt.
      expect(answeredAt).toBeLessThan(req!.answeredAt!);
      const got = await rpcPost(hb.endpoint, 'GetTask', { id: r.json.result!.task!.id });
      expect(got.json.result!.status.state).toBe('TASK_STATE_WORKING');

      // SDK v1.0 with returnImmediately
      const c2 = ctx();
      const accepted2 = workingOn(hb, c2);
      const s = asTask(await sdkB.sendMessage(sdkSend('SLOW job via SDK', { contextId: c2, returnImmediately: true })));
      const sdkAnsweredAt = Date.now();
      expect(s.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
      await accepted2;
      expect(sdkAnsweredAt).toBeLessThan(hb.receiver.requests.find((q) => q.envelope?.task_id === s.id)!.answeredAt!);
    });
  });
});
