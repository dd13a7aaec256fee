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
import type { V1Task } from '../../../src/a2a/wire.js';
import type { ResultOf } from '../../helpers/rpc-json.js';
import type { PlannedResponse, RecordedRequest } from '../../helpers/webhook-receiver.js';
import {
  appendReply,
  asMessage,
  asTask,
  ctx,
  envelopeOf,
  errorInfo,
  expectV1Error,
  ISO_Z,
  post,
  rejection,
  rpcBody,
  rpcPost,
  sdkSend,
  sdkTexts,
  sdkV1Client,
  workingOn,
  v1SendParams,
  webhooksFor,
  type RawResult,
  type WireExchange,
  UUID,
  LABEL,
} from './conformance-helpers.js';
import { unfence } from '../../helpers/agent-text.js';

/**
 * The CORE-* requirements of the public A2A conformance kit (TCK,
 * `tck/requirements/core_operations.py`) that apply to a JSON-RPC server without streaming or
 * push, each through the @a2a-js/sdk v1.0 client and raw JSON-RPC (the v0.3 dialect is in
 * conformance-v03.test.ts). Real parts: Dovecot, a loopback webhook receiver, signed DKIM replies.
 *
 * Where the product deliberately differs from the letter of a requirement (a SendMessage never
 * blocks for the whole job; a follow-up on an open context is a poll; CancelTask is idempotent on a
 * canceled task), the test asserts the documented behaviour and says so.
 */

let dovecot: DovecotHandle;
let h: Harness;
let sdk: Client;
let sdkClaude: Client;
const wire: WireExchange[] = [];
let grok: string;
let claude: string;

beforeAll(async () => {
  dovecot = await startDovecot();
  h = await startHarness({ dovecot, secondAgent: true });
  grok = h.endpoint;
  claude = h.endpointOf('claude');
  sdk = await sdkV1Client(grok, wire);
  sdkClaude = await sdkV1Client(claude);
});
afterAll(async () => {
  await h?.close();
  await dovecot?.stop();
});

/** A raw v1.0 call to the grok endpoint (or `url`). */
function call<M extends string>(method: M, params?: unknown, url = grok): Promise<RawResult<ResultOf<M>>> {
  return rpcPost(url, method, params);
}

/** Raw SendMessage of new work; asserts the answer is a WORKING task and returns it. */
async function working(text = `Job ${hex(4)}`, o: { contextId?: string; url?: string } = {}): Promise<V1Task> {
  const r = await call('SendMessage', v1SendParams(text, { contextId: o.contextId ?? ctx() }), o.url);
  expect(r.json.result?.task?.status?.state, r.text).toBe('TASK_STATE_WORKING');
  return r.json.result!.task!;
}

/** A WORKING task answered by a genuine reply with `status`, then polled on its context; returns the polled task. */
async function answered(status: 'done' | 'failed' | 'input-required', answer = `Answer ${hex(4)}`, url = grok): Promise<V1Task> {
  const t = await working(undefined, { url });
  await appendReply(h, dovecot, t.id, { status, answer });
  const polled = await call('SendMessage', v1SendParams('status', { contextId: t.contextId }), url);
  const expected = { done: 'TASK_STATE_COMPLETED', failed: 'TASK_STATE_FAILED', 'input-required': 'TASK_STATE_INPUT_REQUIRED' }[status];
  expect(polled.json.result!.task!.status.state, polled.text).toBe(expected);
  return polled.json.result!.task!;
}

/** Every task id the grok endpoint lists (all pages). */
async function allListedIds(url = grok): Promise<string[]> {
  const ids: string[] = [];
  let pageToken = '';
  do {
    const r = await call('ListTasks', { pageSize: 100, ...(pageToken ? { pageToken } : {}) }, url);
    ids.push(...r.json.result!.tasks.map((t: { id: string }) => t.id));
    pageToken = r.json.result!.nextPageToken;
  } while (pageToken);
  return ids;
}

describe('SendMessage (TCK §3.1.1)', () => {
  it('CORE-SEND-001 SendMessage returns a Task for new work, and a Message for a poll word on a context without a task', async () => {
    // SDK v1.0
    const c1 = ctx();
    const t = asTask(await sdk.sendMessage(sdkSend('Survey the RAG papers', { contextId: c1 })));
    expect(t.id).toMatch(UUID);
    expect(t.contextId).toBe(c1);
    expect(t.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    const c2 = ctx();
    const m = asMessage(await sdk.sendMessage(sdkSend('status', { contextId: c2 })));
    expect(m.role).toBe(Role.ROLE_AGENT);
    expect(m.contextId).toBe(c2);
    expect(sdkTexts(m.parts).join('')).toMatch(/no task on context_id/);

    // raw: the result holds exactly one of `task` / `message`
    const r = await call('SendMessage', v1SendParams('Summarise the news', { contextId: ctx() }));
    expect(Object.keys(r.json.result!)).toEqual(['task']);
    expect(r.json.result!.task!.status.state).toBe('TASK_STATE_WORKING');
    const c4 = ctx();
    const r2 = await call('SendMessage', v1SendParams('status', { contextId: c4 }));
    expect(Object.keys(r2.json.result!)).toEqual(['message']);
    expect(r2.json.result!.message).toMatchObject({ role: 'ROLE_AGENT', contextId: c4 });
    expect(r2.json.result!.message!.messageId.length).toBeGreaterThan(0);
  });

  it('CORE-SEND-002 SendMessage with the taskId of a terminal task (completed, canceled) and new text is UnsupportedOperationError; a poll word returns the task (product rule)', async () => {
    const done = await answered('done');
    const canceled = await working();
    expect((await call('CancelTask', { id: canceled.id })).json.result!.status.state).toBe('TASK_STATE_CANCELED');
    const hooks = h.receiver.requests.length;

    for (const t of [done, canceled]) {
      const err = await rejection(() => sdk.sendMessage(sdkSend('Now do something else', { taskId: t.id, contextId: t.contextId })));
      expect(err).toBeInstanceOf(UnsupportedOperationError);
      expect(err.envelopeCode).toBe(-32004);
      const body = rpcBody('SendMessage', v1SendParams('And another job', { taskId: t.id }));
      expectV1Error(await post(grok, body), body.id, -32004, 'UNSUPPORTED_OPERATION');
    }
    // the whole text being a poll word on a terminal task answers that task again.
    for (const word of ['status', 'poll', 'check', '?', '']) {
      const r = await call('SendMessage', v1SendParams(word, { taskId: done.id }));
      expect(r.json.result?.task?.id, r.text).toBe(done.id);
      expect(r.json.result!.task!.status.state).toBe('TASK_STATE_COMPLETED');
    }
    const polled = asTask(await sdk.sendMessage(sdkSend('status', { taskId: canceled.id })));
    expect(polled.id).toBe(canceled.id);
    expect(polled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(h.receiver.requests.length).toBe(hooks);
  });

  it('CORE-SEND-003 a part of a media type the agent cannot carry (raw bytes, a URL) is ContentTypeNotSupportedError, and nothing is dispatched', async () => {
    const hooks = h.receiver.requests.length;
    const c = ctx();
    for (const part of [
      { raw: 'dGNr', mediaType: 'application/x-unsupported-tck-type' },
      { url: 'https://example.invalid/file.bin', mediaType: 'application/octet-stream' },
    ]) {
      const body = rpcBody('SendMessage', { message: { role: 'ROLE_USER', parts: [part], messageId: hex(16), contextId: c } });
      expectV1Error(await post(grok, body), body.id, -32005, 'CONTENT_TYPE_NOT_SUPPORTED');
    }
    const req = sdkSend('x', { contextId: c });
    req.message!.parts = [{ content: { $case: 'raw', value: Buffer.from('tck') }, metadata: undefined, filename: 'a.bin', mediaType: 'application/x-unsupported-tck-type' }];
    const err = await rejection(() => sdk.sendMessage(req));
    expect(err).toBeInstanceOf(ContentTypeNotSupportedError);
    expect(err.envelopeCode).toBe(-32005);
    expect(h.receiver.requests.length).toBe(hooks);
    expect((await call('ListTasks', { contextId: c })).json.result!.totalSize).toBe(0);
  });
});

describe('GetTask (TCK §3.1.3)', () => {
  it('CORE-GET-001 GetTask returns the current state with status, artifacts and history (WORKING, then COMPLETED)', async () => {
    const c = ctx();
    const sent = asTask(await sdk.sendMessage(sdkSend('Compare three vector DBs', { contextId: c })));
    const w = await call('GetTask', { id: sent.id });
    expect(w.json.result).toMatchObject({ id: sent.id, contextId: c, status: { state: 'TASK_STATE_WORKING' } });
    expect(w.json.result!.status.message!.parts[0]!.text).toMatch(new RegExp(`Call again with context_id ${c}`));
    expect(w.json.result!.artifacts).toEqual([]);

    await appendReply(h, dovecot, sent.id, { answer: 'Qdrant, Milvus, pgvector.' });
    const got = await sdk.getTask({ tenant: '', id: sent.id });
    expect(got.id).toBe(sent.id);
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(got.artifacts.flatMap((a) => sdkTexts(a.parts)).map(unfence)).toEqual([`${LABEL}\nQdrant, Milvus, pgvector.`]);
    expect(sdkTexts(got.history[0]!.parts)).toEqual(['Compare three vector DBs']);

    // raw: a bare Task (not wrapped), the same state
    const r = await call('GetTask', { id: sent.id });
    expect((r.json.result as Record<string, unknown>).task).toBeUndefined();
    expect(r.json.result).toMatchObject({ id: sent.id, contextId: c, status: { state: 'TASK_STATE_COMPLETED' } });
    expect(r.json.result!.status.timestamp).toMatch(ISO_Z);
    expect(unfence(r.json.result!.artifacts![0]!.parts[0]!.text)).toBe(`${LABEL}\nQdrant, Milvus, pgvector.`);
  });

  it("CORE-GET-002 GetTask of an unknown id, or of another agent's task, is TaskNotFoundError", async () => {
    const theirs = await working('Claude job', { url: claude });
    expect((await call('GetTask', { id: theirs.id }, claude)).json.result!.id).toBe(theirs.id);
    for (const id of [randomUUID(), 'tck-nonexistent-task', theirs.id]) {
      const err = await rejection(() => sdk.getTask({ tenant: '', id }));
      expect(err).toBeInstanceOf(TaskNotFoundError);
      expect(err.envelopeCode).toBe(-32001);
      const body = rpcBody('GetTask', { id });
      expectV1Error(await post(grok, body), body.id, -32001, 'TASK_NOT_FOUND');
    }
  });
});

describe('ListTasks (TCK §3.1.4)', () => {
  it('CORE-LIST-001 ListTasks returns only the tasks of the agent whose endpoint is called', async () => {
    const c = ctx();
    const theirs = await working('Claude-only job', { contextId: c, url: claude });
    const mineElsewhere = await working('Grok job');

    const r = await call('ListTasks', { contextId: c });
    expect(r.json.result).toMatchObject({ tasks: [], totalSize: 0, nextPageToken: '' });
    const listed = await allListedIds();
    expect(listed).toContain(mineElsewhere.id);
    expect(listed).not.toContain(theirs.id);
    const sdkList = await sdk.listTasks({ tenant: '', contextId: c, status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined });
    expect(sdkList.tasks).toEqual([]);

    // the owner sees it
    const own = await sdkClaude.listTasks({ tenant: '', contextId: c, status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined });
    expect(own.tasks.map((t) => t.id)).toEqual([theirs.id]);
    expect(await allListedIds(claude)).not.toContain(mineElsewhere.id);
  });

  it('CORE-LIST-002 ListTasks pages with an opaque pageToken/nextPageToken cursor; pageSize is echoed (default 50) and validated (1–100)', async () => {
    // The bridge's injected clock moves on between the marks, so the timestamps are distinct.
    h.advance(5);
    const after = new Date(h.app.bridge.ctx.now()).toISOString();
    h.advance(5);
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      made.push((await working(`Paged job ${i}`)).id);
      h.advance(5);
    }
    const p1 = await call('ListTasks', { statusTimestampAfter: after, pageSize: 2 });
    expect(p1.json.result).toMatchObject({ pageSize: 2, totalSize: 3 });
    expect(p1.json.result!.tasks).toHaveLength(2);
    expect(p1.json.result!.nextPageToken).toMatch(/^\S+$/);
    // snake_case names are accepted too (the TCK sends them)
    const p2 = await call('ListTasks', { status_timestamp_after: after, page_size: 2, page_token: p1.json.result!.nextPageToken });
    expect(p2.json.result!.tasks).toHaveLength(1);
    expect(p2.json.result!.nextPageToken).toBe('');
    const ids = [...p1.json.result!.tasks, ...p2.json.result!.tasks].map((t: { id: string }) => t.id);
    expect(new Set(ids).size).toBe(3);
    expect([...ids].sort()).toEqual([...made].sort());

    // SDK v1.0: the same pages
    const s1 = await sdk.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 2, pageToken: '', statusTimestampAfter: after });
    expect(s1.tasks.map((t) => t.id)).toEqual(p1.json.result!.tasks.map((t: { id: string }) => t.id));
    const s2 = await sdk.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 2, pageToken: s1.nextPageToken, statusTimestampAfter: after });
    expect(s2.tasks.map((t) => t.id)).toEqual(p2.json.result!.tasks.map((t: { id: string }) => t.id));
    expect(s2.nextPageToken).toBe('');

    expect((await call('ListTasks', { statusTimestampAfter: after })).json.result!.pageSize).toBe(50);
    for (const bad of [{ pageSize: 0 }, { pageSize: 101 }, { pageToken: 'not-a-token-this-server-issued' }]) {
      const body = rpcBody('ListTasks', bad);
      expectV1Error(await post(grok, body), body.id, -32602, 'INVALID_PARAMS');
    }
  });

  it('CORE-LIST-003 ListTasks sorts by status timestamp, newest first (a task updated later moves ahead of newer tasks)', async () => {
    h.advance(5);
    const after = new Date(h.app.bridge.ctx.now()).toISOString();
    h.advance(5);
    const a = await working('Sort A');
    h.advance(5);
    const b = await working('Sort B');
    h.advance(5);
    const c = await working('Sort C');
    h.advance(5);
    // A's status changes last: it must come first.
    await appendReply(h, dovecot, a.id);
    const r = await call('ListTasks', { statusTimestampAfter: after });
    const tasks = r.json.result!.tasks as { id: string; status: { state: string; timestamp: string } }[];
    expect(tasks.map((t) => t.id)).toEqual([a.id, c.id, b.id]);
    expect(tasks[0]!.status.state).toBe('TASK_STATE_COMPLETED');
    const stamps = tasks.map((t) => Date.parse(t.status.timestamp));
    expect(stamps).toEqual([...stamps].sort((x, y) => y - x));

    const s = await sdk.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: after });
    expect(s.tasks.map((t) => t.id)).toEqual([a.id, c.id, b.id]);
  });

  it('CORE-LIST-004 nextPageToken is always present, and "" on the last (or only, or empty) page', async () => {
    const c = ctx();
    const empty = await call('ListTasks', { contextId: c });
    expect(empty.json.result).toEqual({ tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 });
    const t = await working('Only task', { contextId: c });
    const one = await call('ListTasks', { contextId: c, pageSize: 100 });
    expect(one.json.result!.tasks.map((x: { id: string }) => x.id)).toEqual([t.id]);
    expect(Object.hasOwn(one.json.result!, 'nextPageToken')).toBe(true);
    expect(one.json.result!.nextPageToken).toBe('');
    const exact = await call('ListTasks', { contextId: c, pageSize: 1 });
    expect(exact.json.result!.nextPageToken).toBe('');
    const s = await sdk.listTasks({ tenant: '', contextId: c, status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 1, pageToken: '', statusTimestampAfter: undefined });
    expect(s.tasks).toHaveLength(1);
    expect(s.nextPageToken).toBe('');
  });

  it('CORE-LIST-005 ListTasks omits `artifacts` unless includeArtifacts is true (default false)', async () => {
    const done = await answered('done', 'The listed answer.');
    for (const params of [{ contextId: done.contextId }, { contextId: done.contextId, includeArtifacts: false }, { context_id: done.contextId, include_artifacts: false }]) {
      const r = await call('ListTasks', params);
      expect(r.json.result!.tasks).toHaveLength(1);
      expect(Object.hasOwn(r.json.result!.tasks[0]!, 'artifacts'), JSON.stringify(params)).toBe(false);
    }
    for (const params of [{ contextId: done.contextId, includeArtifacts: true }, { context_id: done.contextId, include_artifacts: true }]) {
      const r = await call('ListTasks', params);
      expect(r.json.result!.tasks[0]!.artifacts!.map((a) => unfence(a.parts[0]!.text))).toEqual([`${LABEL}\nThe listed answer.`]);
    }
    // GetTask always carries them (control: the task has an artifact to omit).
    expect((await call('GetTask', { id: done.id })).json.result!.artifacts).toHaveLength(1);

    const base = { tenant: '', contextId: done.contextId, status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined };
    expect((await sdk.listTasks(base)).tasks[0]!.artifacts).toEqual([]);
    const withArtifacts = await sdk.listTasks({ ...base, includeArtifacts: true });
    expect(withArtifacts.tasks[0]!.artifacts.flatMap((a) => sdkTexts(a.parts)).map(unfence)).toEqual([`${LABEL}\nThe listed answer.`]);
  });
});

describe('CancelTask (TCK §3.1.5)', () => {
  it('CORE-CANCEL-001 CancelTask of an open task returns it CANCELED; GetTask agrees; a second cancel is idempotent (product rule); a later reply is not applied', async () => {
    const c = ctx();
    const t = asTask(await sdk.sendMessage(sdkSend('Long job to cancel', { contextId: c })));
    const hooks = webhooksFor(h, t.id);
    const canceled = await sdk.cancelTask({ tenant: '', id: t.id, metadata: undefined });
    expect(canceled.id).toBe(t.id);
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(sdkTexts(canceled.status!.message!.parts).join('')).toMatch(/^Canceled: /);
    expect((await sdk.getTask({ tenant: '', id: t.id })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const again = await call('CancelTask', { id: t.id });
    expect(again.json.result).toMatchObject({ id: t.id, contextId: c, status: { state: 'TASK_STATE_CANCELED' } });

    // raw, on a second task
    const w = await working();
    const r = await call('CancelTask', { id: w.id });
    expect((r.json.result as Record<string, unknown>).task).toBeUndefined();
    expect(r.json.result).toMatchObject({ id: w.id, status: { state: 'TASK_STATE_CANCELED' } });

    // the agent's reply to the canceled task arrives: recorded, never applied
    await appendReply(h, dovecot, t.id, { answer: 'too late' });
    const after = await call('GetTask', { id: t.id });
    expect(after.json.result!.status.state).toBe('TASK_STATE_CANCELED');
    expect(after.json.result!.artifacts).toEqual([]);
    expect(webhooksFor(h, t.id)).toBe(hooks);
  });

  it('CORE-CANCEL-002 CancelTask of a completed or failed task is TaskNotCancelableError (a canceled one is idempotent: product rule)', async () => {
    const done = await answered('done');
    const failed = await answered('failed', 'I could not do it.');
    for (const t of [done, failed]) {
      const err = await rejection(() => sdk.cancelTask({ tenant: '', id: t.id, metadata: undefined }));
      expect(err).toBeInstanceOf(TaskNotCancelableError);
      expect(err.envelopeCode).toBe(-32002);
      const body = rpcBody('CancelTask', { id: t.id });
      expectV1Error(await post(grok, body), body.id, -32002, 'TASK_NOT_CANCELABLE');
    }
    expect((await call('GetTask', { id: done.id })).json.result!.status.state).toBe('TASK_STATE_COMPLETED');
    expect((await call('GetTask', { id: failed.id })).json.result!.status.state).toBe('TASK_STATE_FAILED');
  });

  it("CORE-CANCEL-003 CancelTask of an unknown id, or of another agent's task, is TaskNotFoundError and cancels nothing", async () => {
    const theirs = await working('Claude job not to cancel', { url: claude });
    for (const id of [randomUUID(), 'tck-nonexistent-task', theirs.id]) {
      const err = await rejection(() => sdk.cancelTask({ tenant: '', id, metadata: undefined }));
      expect(err).toBeInstanceOf(TaskNotFoundError);
      const body = rpcBody('CancelTask', { id });
      expectV1Error(await post(grok, body), body.id, -32001, 'TASK_NOT_FOUND');
    }
    expect((await call('GetTask', { id: theirs.id }, claude)).json.result!.status.state).toBe('TASK_STATE_WORKING');
  });
});

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

  it('CORE-CAP-001 with capabilities.pushNotifications false, every push config operation (and a push config in SendMessage) is PushNotificationNotSupportedError', async () => {
    const card = (await (await fetch(`${grok}/.well-known/agent-card.json`)).json()) as { capabilities: Record<string, boolean> };
    expect(card.capabilities.pushNotifications).toBe(false);
    const t = await working();
    const hooks = h.receiver.requests.length;
    const calls: [string, unknown][] = [
      ['CreateTaskPushNotificationConfig', { taskId: t.id, url: 'https://example.invalid/push' }],
      ['GetTaskPushNotificationConfig', { taskId: t.id, id: 'cfg-1' }],
      ['ListTaskPushNotificationConfigs', { taskId: t.id }],
      ['DeleteTaskPushNotificationConfig', { taskId: t.id, id: 'cfg-1' }],
      ['SendMessage', { ...v1SendParams('job with push', { contextId: ctx() }), configuration: { taskPushNotificationConfig: { url: 'https://example.invalid/push' } } }],
    ];
    for (const [method, params] of calls) {
      const body = rpcBody(method, params);
      expectV1Error(await post(grok, body), body.id, -32003, 'PUSH_NOTIFICATION_NOT_SUPPORTED');
    }
    // SDK v1.0: its JSON-RPC transport carries each call to the server, which refuses it…
    const cfg = { tenant: '', id: 'cfg-1', taskId: t.id, url: 'https://example.invalid/push', token: '', authentication: undefined };
    const v1 = { serviceParameters: { 'A2A-Version': '1.0' } };
    const before = wire.length;
    for (const op of [
      () => sdk.transport.createTaskPushNotificationConfig(cfg, v1),
      () => sdk.transport.getTaskPushNotificationConfig({ tenant: '', taskId: t.id, id: 'cfg-1' }, v1),
      () => sdk.transport.listTaskPushNotificationConfig({ tenant: '', taskId: t.id, pageSize: 10, pageToken: '' }, v1),
      () => sdk.transport.deleteTaskPushNotificationConfig({ tenant: '', taskId: t.id, id: 'cfg-1' }, v1),
    ]) {
      const err = await rejection(op);
      expect(err).toBeInstanceOf(PushNotificationNotSupportedError);
      expect(err.envelopeCode).toBe(-32003);
      expect(err.data).toEqual(errorInfo('PUSH_NOTIFICATION_NOT_SUPPORTED'));
    }
    expect(wire.slice(before).map((x) => x.body!.method)).toEqual([
      'CreateTaskPushNotificationConfig',
      'GetTaskPushNotificationConfig',
      'ListTaskPushNotificationConfigs',
      'DeleteTaskPushNotificationConfig',
    ]);
    // …and the SDK client, reading pushNotifications: false from the card, refuses create/get/list itself.
    expect(await rejection(async () => sdk.createTaskPushNotificationConfig(cfg))).toBeInstanceOf(PushNotificationNotSupportedError);
    expect(wire.length).toBe(before + 4);
    expect(h.receiver.requests.length).toBe(hooks);
  });

  it('CORE-CAP-002 with capabilities.streaming false, SendStreamingMessage and SubscribeToTask are UnsupportedOperationError (and start no task); the SDK falls back to SendMessage', async () => {
    const card = (await (await fetch(`${grok}/.well-known/agent-card.json`)).json()) as { capabilities: Record<string, boolean> };
    expect(card.capabilities.streaming).toBe(false);
    const t = await working();
    const hooks = h.receiver.requests.length;
    const c = ctx();
    const s = rpcBody('SendStreamingMessage', v1SendParams('stream me', { contextId: c }));
    const rs = await post(grok, s, { accept: 'text/event-stream' });
    expectV1Error(rs, s.id, -32004, 'UNSUPPORTED_OPERATION');
    expect(rs.contentType).toMatch(/^application\/json/);
    const sub = rpcBody('SubscribeToTask', { id: t.id });
    expectV1Error(await post(grok, sub), sub.id, -32004, 'UNSUPPORTED_OPERATION');
    expect(h.receiver.requests.length).toBe(hooks);
    expect((await call('ListTasks', { contextId: c })).json.result!.totalSize).toBe(0);

    const err = await rejection(async () => {
      for await (const _ of sdk.resubscribeTask({ tenant: '', id: t.id })) void _;
    });
    expect(err).toBeInstanceOf(UnsupportedOperationError);
    expect(err.envelopeCode).toBe(-32004);

    // The SDK honours streaming:false and sends a plain SendMessage instead.
    const before = wire.length;
    const events = [];
    for await (const e of sdk.sendMessageStream(sdkSend('streamed via fallback', { contextId: ctx() }))) events.push(e);
    expect(events).toHaveLength(1);
    expect(events[0]!.payload?.$case).toBe('task');
    expect(wire.slice(before).map((x) => x.body?.method)).toEqual(['SendMessage']);
  });

  it('CORE-CAP-003 with capabilities.extendedAgentCard false, GetExtendedAgentCard is UnsupportedOperationError', async () => {
    const card = (await (await fetch(`${grok}/.well-known/agent-card.json`)).json()) as { capabilities: Record<string, boolean> };
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

describe('history (TCK §3.2.4)', () => {
  // One task with four history messages: ask, the agent's question, the answer, the agent's result.
  let task: { id: string; contextId: string };
  const m1 = hex(16);
  const m3 = hex(16);
  const expected = (): { role: string; text: string }[] => [
    { role: 'ROLE_USER', text: 'Q1: find the paper' },
    { role: 'ROLE_AGENT', text: `${LABEL}\nWhich year?` },
    { role: 'ROLE_USER', text: '2024' },
    { role: 'ROLE_AGENT', text: `${LABEL}\nPaper X (2024).` },
  ];

  beforeAll(async () => {
    const c = ctx();
    task = (await call('SendMessage', v1SendParams('Q1: find the paper', { contextId: c, messageId: m1 }))).json.result!.task!;
    await appendReply(h, dovecot, task.id, { status: 'input-required', answer: 'Which year?' });
    expect((await call('SendMessage', v1SendParams('status', { contextId: c }))).json.result!.task!.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    expect((await call('SendMessage', v1SendParams('2024', { contextId: c, messageId: m3 }))).json.result!.task!.status.state).toBe('TASK_STATE_WORKING');
    await appendReply(h, dovecot, task.id, { status: 'done', answer: 'Paper X (2024).' });
    expect((await call('SendMessage', v1SendParams('check', { contextId: c }))).json.result!.task!.status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('CORE-HIST-001 GetTask with historyLength 0 returns no history', async () => {
    const r = await call('GetTask', { id: task.id, historyLength: 0 });
    expect(r.json.result!.history ?? []).toEqual([]);
    const snake = await call('GetTask', { id: task.id, history_length: 0 });
    expect(snake.json.result!.history ?? []).toEqual([]);
    expect((await sdk.getTask({ tenant: '', id: task.id, historyLength: 0 })).history).toEqual([]);
    const listed = await call('ListTasks', { contextId: task.contextId, historyLength: 0 });
    expect(listed.json.result!.tasks[0]!.history ?? []).toEqual([]);
  });

  it('CORE-HIST-002 history never holds more than historyLength messages, and keeps the newest', async () => {
    const all = expected();
    for (const n of [1, 2, 3, 4, 10]) {
      const r = await call('GetTask', { id: task.id, historyLength: n });
      const got = r.json.result!.history.map((m) => ({ role: m.role, text: unfence(m.parts[0]!.text) }));
      expect(got, `historyLength ${n}`).toEqual(all.slice(-Math.min(n, all.length)));
      const s = await sdk.getTask({ tenant: '', id: task.id, historyLength: n });
      expect(s.history.length).toBe(Math.min(n, all.length));
    }
    const listed = await call('ListTasks', { contextId: task.contextId, historyLength: 1 });
    expect(listed.json.result!.tasks[0]!.history).toHaveLength(1);
  });

  it('CORE-HIST-003 SendMessage with configuration.historyLength 0 returns no history (and 1 returns one message)', async () => {
    const r = await call('SendMessage', { ...v1SendParams('status', { contextId: task.contextId }), configuration: { historyLength: 0 } });
    expect(r.json.result!.task!.id).toBe(task.id);
    expect(r.json.result!.task!.history ?? []).toEqual([]);
    const one = await call('SendMessage', { ...v1SendParams('status', { contextId: task.contextId }), configuration: { historyLength: 1 } });
    expect(one.json.result!.task!.history).toHaveLength(1);
    const s = asTask(await sdk.sendMessage(sdkSend('status', { contextId: task.contextId, historyLength: 0 })));
    expect(s.id).toBe(task.id);
    expect(s.history).toEqual([]);
    const fresh = asTask(await sdk.sendMessage(sdkSend('A new job, no history wanted', { contextId: ctx(), historyLength: 0 })));
    expect(fresh.history).toEqual([]);
  });

  it('CORE-HIST-004 GetTask returns the persisted messages of the task (asks and agent replies; polls are not kept)', async () => {
    const r = await call('GetTask', { id: task.id });
    expect(r.json.result!.history).toHaveLength(4);
    const s = await sdk.getTask({ tenant: '', id: task.id });
    expect(s.history.map((m) => m.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT, Role.ROLE_USER, Role.ROLE_AGENT]);
  });

  it('CORE-HIST-005 history is in chronological order', async () => {
    const r = await call('GetTask', { id: task.id });
    expect(r.json.result!.history.map((m) => unfence(m.parts[0]!.text))).toEqual(expected().map((m) => m.text));
    const s = await sdk.getTask({ tenant: '', id: task.id });
    expect(s.history.map((m) => unfence(sdkTexts(m.parts)[0]))).toEqual(expected().map((m) => m.text));
  });

  it('CORE-HIST-006 history content matches the exchanged messages (messageId, role, text, task and context)', async () => {
    const r = await call('GetTask', { id: task.id });
    const h0 = r.json.result!.history;
    expect(h0[0]).toMatchObject({ messageId: m1, role: 'ROLE_USER', taskId: task.id, contextId: task.contextId, parts: [{ text: 'Q1: find the paper' }] });
    expect(h0[2]).toMatchObject({ messageId: m3, role: 'ROLE_USER', taskId: task.id, contextId: task.contextId, parts: [{ text: '2024' }] });
    expect(h0[1]).toMatchObject({ role: 'ROLE_AGENT', taskId: task.id, parts: [{ metadata: { untrusted: true, source: 'agent', agent: 'grok' } }] });
    expect(h0[3]).toMatchObject({ role: 'ROLE_AGENT', taskId: task.id, parts: [{ metadata: { untrusted: true, source: 'agent', agent: 'grok' } }] });
    expect([unfence(h0[1]!.parts[0]!.text), unfence(h0[3]!.parts[0]!.text)]).toEqual([`${LABEL}\nWhich year?`, `${LABEL}\nPaper X (2024).`]);
    // the agent's final message and the artifact say the same
    expect(r.json.result!.artifacts![0]!.parts[0]!.text).toBe(h0[3]!.parts[0]!.text);
    const s = await sdk.getTask({ tenant: '', id: task.id });
    expect(s.history.map((m) => m.messageId).filter((x) => x === m1 || x === m3)).toEqual([m1, m3]);
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
