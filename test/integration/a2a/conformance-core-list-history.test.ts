/**
 * The A2A conformance kit's (TCK, `tck/requirements/core_operations.py`) CORE-LIST and CORE-HIST
 * requirements (ListTasks, and the history that GetTask, ListTasks and SendMessage return) that
 * apply to a JSON-RPC server; the rest of CORE-* is in the other conformance-core-*.test.ts files.
 * Through the @a2a-js/sdk v1.0 client and raw JSON-RPC (the v0.3 dialect is in
 * conformance-v03*.test.ts). Real parts: Dovecot, a loopback webhook receiver, signed DKIM replies.
 *
 * Where the product deliberately differs from the letter of a requirement (a SendMessage never
 * blocks for the whole job; a follow-up on an open context is a poll), the test asserts the
 * documented behaviour and says so.
 */
import { Role, TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { hex, type Harness } from '../../helpers/bridge-harness.js';
import type { DovecotHandle } from '../../helpers/dovecot.js';
import {
  appendReply, asTask, ctx, expectV1Error, post, rpcBody, sdkSend, sdkTexts, sdkV1Client,
  v1SendParams, type WireExchange, LABEL,
} from './conformance-helpers.js';
import { unfence } from '../../helpers/agent-text.js';
import { useConformanceBridge, coreCalls } from './conformance-calls.js';

let dovecot: DovecotHandle;
let h: Harness;
let sdk: Client;
let sdkClaude: Client;
const wire: WireExchange[] = [];
let grok: string;
let claude: string;

useConformanceBridge({ secondAgent: true }, async (b) => {
  ({ dovecot, h } = b);
  grok = h.endpoint;
  claude = h.endpointOf('claude');
  sdk = await sdkV1Client(grok, wire);
  sdkClaude = await sdkV1Client(claude);
});

const { call, working, answered, allListedIds } = coreCalls(() => ({ dovecot, h, url: grok }));

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
