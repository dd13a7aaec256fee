/**
 * The A2A conformance kit's (TCK, `tck/requirements/core_operations.py`) CORE-SEND, CORE-GET and
 * CORE-CANCEL requirements (SendMessage, GetTask, CancelTask) that apply to a JSON-RPC server; the
 * rest of CORE-* is in the other conformance-core-*.test.ts files. Through the @a2a-js/sdk v1.0
 * client and raw JSON-RPC (the v0.3 dialect is in conformance-v03*.test.ts). Real parts: Dovecot, a
 * loopback webhook receiver, signed DKIM replies.
 *
 * Where the product deliberately differs from the letter of a requirement (a SendMessage never
 * blocks for the whole job; a follow-up on an open context is a poll), the test asserts the
 * documented behaviour and says so.
 */
import { Role, TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { ContentTypeNotSupportedError, TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hex, type Harness } from '../../helpers/bridge-harness.js';
import type { DovecotHandle } from '../../helpers/dovecot.js';
import {
  appendReply, asMessage, asTask, ctx, expectV1Error, ISO_Z, post, rejection, rpcBody, sdkSend,
  sdkTexts, sdkV1Client, v1SendParams, webhooksFor, type WireExchange, UUID, LABEL,
} from './conformance-helpers.js';
import { unfence } from '../../helpers/agent-text.js';
import { useConformanceBridge, coreCalls } from './conformance-calls.js';

let dovecot: DovecotHandle;
let h: Harness;
let sdk: Client;
const wire: WireExchange[] = [];
let grok: string;
let claude: string;

useConformanceBridge({ secondAgent: true }, async (b) => {
  ({ dovecot, h } = b);
  grok = h.endpoint;
  claude = h.endpointOf('claude');
  sdk = await sdkV1Client(grok, wire);
});

const { call, working, answered } = coreCalls(() => ({ dovecot, h, url: grok }));

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

describe('CancelTask (TCK §3.1.5)', () => {
  it('CORE-CANCEL-001 CancelTask of an open task returns it CANCELED; GetTask agrees; a second cancel is TaskNotCancelableError; a later reply is not applied', async () => {
    const c = ctx();
    const t = asTask(await sdk.sendMessage(sdkSend('Long job to cancel', { contextId: c })));
    const hooks = webhooksFor(h, t.id);
    const canceled = await sdk.cancelTask({ tenant: '', id: t.id, metadata: undefined });
    expect(canceled.id).toBe(t.id);
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(sdkTexts(canceled.status!.message!.parts).join('')).toMatch(/^Canceled: /);
    expect((await sdk.getTask({ tenant: '', id: t.id })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const again = rpcBody('CancelTask', { id: t.id });
    expectV1Error(await post(grok, again), again.id, -32002, 'TASK_NOT_CANCELABLE');

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

  it('CORE-CANCEL-002 CancelTask of a completed or failed task is TaskNotCancelableError', async () => {
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
