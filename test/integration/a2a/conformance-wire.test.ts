import { Role, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import {
  ContentTypeNotSupportedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
  VersionNotSupportedError,
} from '@a2a-js/sdk/errors';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS } from '../../../src/a2a/errors.js';
import { hex, startHarness, type Harness } from '../../helpers/bridge-harness.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import type { Artifact, Message, Task } from '@a2a-js/sdk';
import type { ProtoJson } from '../../../src/a2a/proto-json.js';
import type { V1ListTasksResult, V1Task } from '../../../src/a2a/wire.js';
import type { EitherOf, ResultOf, RpcAnswer, V1SendResult } from '../../helpers/rpc-json.js';
import {
  appendReply,
  asTask,
  ctx,
  errorInfo,
  expectV03Error,
  expectV1Error,
  ISO_Z,
  keysOf,
  post,
  recordingFetch,
  rejection,
  rpcBody,
  rpcPost,
  sdkSend,
  sdkV1Client,
  v03SendParams,
  v1SendParams,
  V1_STATES,
  type RawResult,
  type V03AgentCardJson,
  type V1AgentCardJson,
  type WireExchange,
} from './conformance-helpers.js';

/**
 * The Agent Card (CARD-*), data model (DM-*), JSON-RPC binding (JSONRPC-*) and versioning
 * (VER-SERVER-*) requirements of the public A2A conformance kit (TCK,
 * `tck/requirements/{agent_card,data_model,binding_jsonrpc,versioning}.py`) that apply to a
 * JSON-RPC server without streaming or push; through the @a2a-js/sdk v1.0 client and raw JSON-RPC.
 *
 * Product rule (docs/architecture.md, "Context rules"): the two grammars never overlap, so the
 * server routes by method name — a v1.0 method name answers in v1.0 shape whatever `A2A-Version`
 * says, and a v0.3 name in v0.3 shape. The header decides the dialect of answers that have no
 * method to go by (a parse error, an unknown method) and refuses unsupported versions.
 */

let dovecot: DovecotHandle;
let h: Harness;
let sdk: Client;
const wire: WireExchange<EitherOf<V1Task, V1SendResult>>[] = [];
let url: string;

beforeAll(async () => {
  dovecot = await startDovecot();
  h = await startHarness({ dovecot });
  url = h.endpoint;
  sdk = await sdkV1Client(url, wire);
});
afterAll(async () => {
  await h?.close();
  await dovecot?.stop();
});

function call<M extends string>(method: M, params?: unknown, headers: Record<string, string | null> = {}): Promise<RawResult<ResultOf<M>>> {
  return rpcPost(url, method, params, headers);
}

/** GET of a card path; the body read as a v1.0 card, or as `C` (the v0.3 card at `agent.json`). */
async function getCard<C = V1AgentCardJson>(path: string, init?: RequestInit): Promise<{ status: number; type: string | null; card: C }> {
  // A v1.0 client says so (A2A v1.0 §3.6.1); without the header the v0.3 card comes (§3.6.2, docs/discovery.md).
  const res = await fetch(`${h.app.server.baseUrl}${path}`, { ...init, headers: { 'a2a-version': '1.0', ...(init?.headers as Record<string, string>) } });
  return { status: res.status, type: res.headers.get('content-type'), card: (await res.json()) as C };
}

/** Raw SendMessage of new work; returns the WORKING task. */
async function working(text = `Job ${hex(4)}`): Promise<V1Task> {
  const r = await call('SendMessage', v1SendParams(text, { contextId: ctx() }));
  expect(r.json.result?.task?.status?.state, r.text).toBe('TASK_STATE_WORKING');
  return r.json.result!.task!;
}

describe('Agent Card (TCK §8, §4.4.1)', () => {
  it('CARD-DISC-001 the Agent Card is served without auth at /.well-known/agent-card.json, at the root and under the agent path, and the SDK resolves it', async () => {
    const root = await getCard('/.well-known/agent-card.json');
    const under = await getCard('/agents/grok/.well-known/agent-card.json');
    for (const r of [root, under]) {
      expect(r.status).toBe(200);
      expect(r.type).toMatch(/^application\/json/);
      expect(r.card.name).toBe('grok');
    }
    expect(root.card).toEqual(under.card);
    expect((await fetch(`${url}/.well-known/agent-card.json`, { method: 'POST' })).status).toBe(405);
    expect((await fetch(`${h.app.server.baseUrl}/agents/nobody/.well-known/agent-card.json`)).status).toBe(404);

    const resolved = await new DefaultAgentCardResolver().resolve(`${url}/`);
    expect(resolved.name).toBe('grok');
    expect(resolved.supportedInterfaces[0]!.url).toBe(url);
    // a client made from the server root finds the agent through the card
    const log: WireExchange[] = [];
    const fromRoot = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl: recordingFetch(log) })] }),
    ).createFromUrl(`${h.app.server.baseUrl}/`);
    expect(asTask(await fromRoot.sendMessage(sdkSend('Discovered job', { contextId: ctx() }))).status?.state).toBe(TaskState.TASK_STATE_WORKING);
    expect(log.at(-1)!.url).toBe(url);
  });

  it('CARD-PROTO-001 the card declares its protocols: JSONRPC interfaces, v1.0 first, Major.Minor versions', async () => {
    const { card } = await getCard('/agents/grok/.well-known/agent-card.json');
    expect(Array.isArray(card.supportedInterfaces)).toBe(true);
    expect(card.supportedInterfaces!.length).toBeGreaterThan(0);
    expect(card.supportedInterfaces![0]).toEqual({ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    for (const i of card.supportedInterfaces!) {
      expect(['JSONRPC', 'GRPC', 'HTTP+JSON']).toContain(i.protocolBinding);
      expect(i.protocolVersion).toMatch(/^\d+\.\d+$/);
    }
    expect(card.supportedInterfaces!.map((i) => [i.protocolBinding, i.protocolVersion])).toEqual([
      ['JSONRPC', '1.0'],
      ['HTTP+JSON', '1.0'],
      ['JSONRPC', '0.3'],
    ]);
    // the SDK picks the v1.0 JSON-RPC interface from it
    expect(sdk.protocolVersion).toBe('1.0');
  });

  it('CARD-PROTO-002 every declared interface URL answers its declared binding and version (with and without a trailing slash)', async () => {
    const { card } = await getCard('/agents/grok/.well-known/agent-card.json');
    for (const i of card.supportedInterfaces!) {
      expect(new URL(i.url!).href.replace(/\/$/, '')).toBe(i.url);
      if (i.protocolBinding === 'HTTP+JSON') {
        const r = await fetch(`${i.url}/tasks/${randomUUID()}`, { headers: { authorization: `Bearer ${h.configDir.bearer}`, 'a2a-version': '1.0' } });
        expect(r.status).toBe(404);
        expect(((await r.json()) as { error: { details: { reason: string }[] } }).error.details[0]!.reason).toBe('TASK_NOT_FOUND');
        continue;
      }
      for (const target of [i.url!, `${i.url}/`]) {
        const id = randomUUID();
        if (i.protocolVersion === '1.0') {
          const body = rpcBody('GetTask', { id });
          expectV1Error(await post(target, body, { 'a2a-version': '1.0' }), body.id, -32001, 'TASK_NOT_FOUND');
        } else {
          const body = rpcBody('tasks/get', { id });
          expectV03Error(await post(target, body, { 'a2a-version': i.protocolVersion! }), body.id, -32001);
        }
      }
    }
    const { card: legacy } = await getCard<V03AgentCardJson>('/agents/grok/.well-known/agent.json');
    expect(legacy.url).toBe(url);
    expect(legacy.preferredTransport).toBe('JSONRPC');
  });

  it('CARD-STRUCT-001 the card has every required field: name, description, supportedInterfaces, version, capabilities, modes, skills, security', async () => {
    const { card } = await getCard('/agents/grok/.well-known/agent-card.json');
    for (const k of ['name', 'description', 'version'] as const) expect(typeof card[k] === 'string' && card[k].length > 0, k).toBe(true);
    expect(card.capabilities).toEqual({ streaming: true, pushNotifications: true, extendedAgentCard: false });
    expect(card.defaultInputModes).toContain('text/plain');
    expect(card.defaultOutputModes).toContain('text/plain');
    expect(card.skills!.length).toBeGreaterThan(0);
    for (const s of card.skills!) {
      for (const k of ['id', 'name', 'description'] as const) expect(typeof s[k] === 'string' && s[k].length > 0, `skill.${k}`).toBe(true);
      expect(s.tags!.length).toBeGreaterThan(0);
    }
    expect(card.securitySchemes!.bearer!.httpAuthSecurityScheme!.scheme).toMatch(/^bearer$/i);
    for (const req of card.securityRequirements!) for (const name of Object.keys(req.schemes!)) expect(card.securitySchemes).toHaveProperty(name);
    // the SDK parses the same fields
    const parsed = await sdk.getAgentCard();
    expect(parsed.skills.map((s) => s.id)).toEqual(card.skills!.map((s) => s.id));
    expect(parsed.securitySchemes.bearer?.scheme?.$case).toBe('httpAuthSecurityScheme');
    expect(parsed.capabilities?.streaming).toBe(true);
  });
});

describe('data model (TCK §4, §5.5–5.7)', () => {
  /** Every task, message and result the server answered while building the fixture, raw, read as the protocol's shapes. */
  const tasks: ProtoJson<Task>[] = [];
  const messages: ProtoJson<Message>[] = [];
  const results: RpcAnswer<V1SendResult | V1Task | V1ListTasksResult>[] = [];
  let ids: Record<'working' | 'done' | 'asking' | 'failed' | 'canceled', string>;

  const collect = <R extends V1SendResult | V1Task | V1ListTasksResult>(r: RawResult<R>): R => {
    expect(r.json.error, r.text).toBeUndefined();
    results.push(r.json);
    const res: V1SendResult | V1Task | V1ListTasksResult = r.json.result!;
    if ('task' in res && res.task) tasks.push(res.task);
    else if ('message' in res && res.message) messages.push(res.message);
    else if ('tasks' in res && res.tasks) tasks.push(...res.tasks);
    else tasks.push(res as V1Task);
    return r.json.result!;
  };

  beforeAll(async () => {
    const send = async (text: string, extra: Record<string, unknown> = {}) =>
      collect(await call('SendMessage', { ...v1SendParams(text, { contextId: ctx() }), ...extra })).task;
    const w = await send('A job that stays working');
    const done = await send('A job that completes');
    const asking = await send('A job that needs input');
    const failed = await send('A job that fails');
    const canceled = await send('A job to cancel');
    await send('An immediate job', { configuration: { returnImmediately: true } });
    await appendReply(h, dovecot, done!.id, { answer: 'Completed answer.' });
    await appendReply(h, dovecot, asking!.id, { status: 'input-required', answer: 'Which one?' });
    await appendReply(h, dovecot, failed!.id, { status: 'failed', answer: 'It broke.' });
    collect(await call('SendMessage', v1SendParams('status', { contextId: done!.contextId })));
    collect(await call('CancelTask', { id: canceled!.id }));
    for (const t of [w, done, asking, failed]) collect(await call('GetTask', { id: t!.id }));
    collect(await call('ListTasks', { includeArtifacts: true, pageSize: 100 }));
    collect(await call('SendMessage', v1SendParams('status', { contextId: ctx() })));
    ids = { working: w!.id, done: done!.id, asking: asking!.id, failed: failed!.id, canceled: canceled!.id };
  });

  const allMessages = (): ProtoJson<Message>[] => [...messages, ...tasks.flatMap((t) => [...(t.status!.message ? [t.status!.message] : []), ...(t.history ?? [])])];
  const allArtifacts = (): ProtoJson<Artifact>[] => tasks.flatMap((t) => t.artifacts ?? []);

  it('DM-TASK-001 every Task (SendMessage, GetTask, ListTasks, CancelTask) has an id and a status', async () => {
    expect(tasks.length).toBeGreaterThanOrEqual(15);
    for (const t of tasks) {
      expect(typeof t.id === 'string' && t.id.length > 0).toBe(true);
      expect(typeof t.status).toBe('object');
      expect(typeof t.contextId === 'string' && t.contextId.length > 0).toBe(true);
    }
    const s = await sdk.getTask({ tenant: '', id: ids.done });
    expect(s.id).toBe(ids.done);
    expect(s.status).toBeDefined();
  });

  it('DM-TASK-002 TaskState values are only the defined enumeration (here: submitted, working, input-required, completed, failed, canceled)', async () => {
    const seen = new Set(tasks.map((t) => t.status!.state));
    for (const s of seen) expect(V1_STATES).toContain(s);
    for (const s of ['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED']) {
      expect(seen).toContain(s);
    }
    const expected: [string, TaskState][] = [
      [ids.working, TaskState.TASK_STATE_WORKING],
      [ids.done, TaskState.TASK_STATE_COMPLETED],
      [ids.asking, TaskState.TASK_STATE_INPUT_REQUIRED],
      [ids.failed, TaskState.TASK_STATE_FAILED],
      [ids.canceled, TaskState.TASK_STATE_CANCELED],
    ];
    for (const [id, state] of expected) expect((await sdk.getTask({ tenant: '', id })).status?.state).toBe(state);
  });

  it('DM-MSG-001 every Message (results, status messages, history) has role, non-empty parts and a messageId', () => {
    const all = allMessages();
    expect(all.length).toBeGreaterThan(10);
    for (const m of all) {
      expect(typeof m.messageId === 'string' && m.messageId.length > 0, JSON.stringify(m)).toBe(true);
      expect(typeof m.role).toBe('string');
      expect(m.parts!.length).toBeGreaterThan(0);
    }
  });

  it('DM-MSG-002 Role values are only ROLE_USER and ROLE_AGENT', async () => {
    const roles = new Set(allMessages().map((m) => m.role));
    expect([...roles].sort()).toEqual(['ROLE_AGENT', 'ROLE_USER']);
    const s = await sdk.getTask({ tenant: '', id: ids.asking });
    expect(s.history.map((m) => m.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT]);
  });

  it('DM-PART-001 every Part holds exactly one of text, raw, url, data (and no v0.3 `kind`)', () => {
    const parts = [...allMessages().flatMap((m) => m.parts), ...allArtifacts().flatMap((a) => a.parts)];
    expect(parts.length).toBeGreaterThan(10);
    for (const p of parts) {
      expect(['text', 'raw', 'url', 'data'].filter((k) => k in p!), JSON.stringify(p)).toHaveLength(1);
      expect('kind' in p!).toBe(false);
    }
  });

  it('DM-ART-001 every Artifact has an artifactId and non-empty parts', async () => {
    const arts = allArtifacts();
    expect(arts.length).toBeGreaterThanOrEqual(2);
    for (const a of arts) {
      expect(typeof a.artifactId === 'string' && a.artifactId.length > 0).toBe(true);
      expect(a.parts!.length).toBeGreaterThan(0);
    }
    const s = await sdk.getTask({ tenant: '', id: ids.done });
    expect(s.artifacts).toHaveLength(1);
    expect(s.artifacts[0]!.artifactId.length).toBeGreaterThan(0);
  });

  it('DM-STATUS-001 every TaskStatus has a valid state (and an ISO timestamp)', () => {
    for (const t of tasks) {
      expect(V1_STATES).toContain(t.status!.state);
      expect(t.status!.timestamp).toMatch(ISO_Z);
    }
  });

  it('DM-SERIAL-001 field names are camelCase everywhere (results and errors)', async () => {
    const err = await call('GetTask', { id: randomUUID() });
    const keys = new Set([...keysOf(results), ...keysOf(err.json)]);
    expect(keys.size).toBeGreaterThan(20);
    const bad = [...keys].filter((k) => k !== '@type' && !/^[a-z][a-zA-Z0-9]*$/.test(k));
    expect(bad).toEqual([]);
    for (const k of ['contextId', 'messageId', 'artifactId', 'nextPageToken', 'pageSize', 'totalSize', 'taskId', 'mediaType']) expect(keys).toContain(k);
  });

  it('DM-SERIAL-002 enums are ProtoJSON string names (TASK_STATE_*, ROLE_*), never numbers', () => {
    for (const t of tasks) expect(t.status!.state).toMatch(/^TASK_STATE_[A-Z_]+$/);
    for (const m of allMessages()) expect(m.role).toMatch(/^ROLE_(USER|AGENT)$/);
  });

  it('DM-SERIAL-003 timestamps are ISO 8601 in UTC with Z', async () => {
    const stamps = tasks.flatMap((t) => [t.status!.timestamp, t.metadata?.createdAt, t.metadata?.deadline].filter((x) => x !== undefined));
    expect(stamps.length).toBeGreaterThan(tasks.length);
    for (const s of stamps) expect(s).toMatch(ISO_Z);
    // requests carry them the same way: statusTimestampAfter in ISO with Z is read
    const future = new Date(Date.now() + 3600_000).toISOString();
    expect((await call('ListTasks', { statusTimestampAfter: future })).json.result!.totalSize).toBe(0);
    const since2000 = (await call('ListTasks', { statusTimestampAfter: '2000-01-01T00:00:00Z' })).json.result!.totalSize;
    expect(since2000).toBeGreaterThanOrEqual(new Set(tasks.map((t) => t.id)).size);
  });

  it('DM-SERIAL-003 a status timestamp the server wrote, sent back as statusTimestampAfter, excludes the task it came from (the filter and the written timestamps agree)', async () => {
    // A fresh task, its status time as the server reports it, then that time as the filter.
    const t = await working('timestamp round trip');
    const got = (await call('GetTask', { id: t.id })).json.result;
    const after = await call('ListTasks', { statusTimestampAfter: got!.status.timestamp });
    const listed = after.json.result!.tasks as { id: string; status: { timestamp: string } }[];
    // every task listed must have a status timestamp strictly after the filter, as written on the wire
    for (const x of listed) expect(Date.parse(x.status.timestamp), `${x.id} at ${x.status.timestamp}`).toBeGreaterThan(Date.parse(got!.status.timestamp));
    expect(listed.map((x) => x.id)).not.toContain(t.id);
  });

  it('DM-SERIAL-004 required fields are present in every answer, and a request missing one is refused', async () => {
    for (const r of results) {
      const res = r.result;
      if (res && 'tasks' in res) for (const k of ['tasks', 'nextPageToken', 'pageSize', 'totalSize']) expect(res).toHaveProperty(k);
    }
    for (const a of allArtifacts()) expect(a.parts!.length).toBeGreaterThan(0);
    const base = { role: 'ROLE_USER', parts: [{ text: 'x' }], messageId: hex(16), contextId: ctx() };
    const hooks = h.receiver.requests.length;
    for (const drop of ['role', 'parts', 'messageId'] as const) {
      const message: Record<string, unknown> = { ...base, messageId: hex(16) };
      delete message[drop];
      const body = rpcBody('SendMessage', { message });
      expectV1Error(await post(url, body), body.id, -32602, 'INVALID_PARAMS');
    }
    const body = rpcBody('GetTask', {});
    expectV1Error(await post(url, body), body.id, -32602, 'INVALID_PARAMS');
    expect(h.receiver.requests.length).toBe(hooks);
  });

  it('DM-SERIAL-005 unrecognized fields in a request are ignored', async () => {
    const c = ctx();
    const r = await call('SendMessage', {
      tenant: '',
      futureTopLevel: { x: 1 },
      message: {
        role: 'ROLE_USER',
        parts: [{ text: 'Forward compatible', mediaType: 'text/plain', futurePartField: true, metadata: { k: 'v' } }],
        messageId: hex(16),
        contextId: c,
        extensions: [],
        referenceTaskIds: [],
        futureMessageField: 'ignored',
      },
      configuration: { acceptedOutputModes: ['text/plain'], futureConfig: 7 },
    });
    expect(r.json.result!.task).toMatchObject({ contextId: c, status: { state: 'TASK_STATE_WORKING' } });
    expect((await call('GetTask', { id: r.json.result!.task!.id, futureGetField: 'x' })).json.result!.id).toBe(r.json.result!.task!.id);
    expect((await call('ListTasks', { contextId: c, futureListField: [] })).json.result!.totalSize).toBe(1);
    expect((await call('CancelTask', { id: r.json.result!.task!.id, metadata: { why: 'test' }, futureCancelField: 1 })).json.result!.status.state).toBe(
      'TASK_STATE_CANCELED',
    );
  });
});

describe('JSON-RPC binding (TCK §9, §5.4)', () => {
  it('JSONRPC-FMT-001 a JSON-RPC 2.0 request gets a response echoing jsonrpc and id with exactly one of result/error; malformed envelopes are -32700/-32600', async () => {
    for (const id of ['abc', 7, 0]) {
      const r = await post(url, rpcBody('GetTask', { id: randomUUID() }, id));
      expect(r.json.jsonrpc).toBe('2.0');
      expect(r.json.id).toBe(id);
      expect(['result' in r.json, 'error' in r.json]).toEqual([false, true]);
    }
    const ok = await post(url, rpcBody('ListTasks', {}, 'list-1'));
    expect(Object.keys(ok.json).sort()).toEqual(['id', 'jsonrpc', 'result']);

    const parse = await post(url, '{"jsonrpc":"2.0","id":1,"method":');
    expectV1Error(parse, null, -32700, 'PARSE_ERROR');
    const cases: [unknown, unknown][] = [
      [{ jsonrpc: '1.0', id: 'v1', method: 'GetTask', params: { id: 'x' } }, 'v1'],
      [{ id: 'nov', method: 'GetTask', params: { id: 'x' } }, 'nov'],
      [{ jsonrpc: '2.0', id: 'nom', params: {} }, 'nom'],
      [{ jsonrpc: '2.0', id: 'numm', method: 5 }, 'numm'],
      [[rpcBody('GetTask', { id: 'x' })], null],
      [{ jsonrpc: '2.0', method: 'GetTask', params: { id: 'x' } }, null],
      [{ jsonrpc: '2.0', id: { a: 1 }, method: 'GetTask', params: { id: 'x' } }, null],
      ['"just a string"', null],
    ];
    for (const [body, id] of cases) {
      expectV1Error(await post(url, typeof body === 'string' ? body : JSON.stringify(body)), id, -32600, 'INVALID_REQUEST');
    }
    const arr = rpcBody('GetTask', ['x']);
    expectV1Error(await post(url, arr), arr.id, -32602, 'INVALID_PARAMS');
  });

  it('JSONRPC-FMT-002 responses are application/json (results and errors); requests must be JSON (text/plain is refused, application/a2a+json accepted)', async () => {
    const hooks = h.receiver.requests.length;
    const results = [
      await rpcPost(url, 'ListTasks', {}),
      await rpcPost(url, 'GetTask', { id: randomUUID() }),
      await post(url, '{oops'),
      await rpcPost(url, 'SendMessage', v1SendParams('json charset', { contextId: ctx() }), { 'content-type': 'application/json; charset=utf-8' }),
      await rpcPost(url, 'SendMessage', v1SendParams('a2a+json', { contextId: ctx() }), { 'content-type': 'application/a2a+json' }),
    ] as const;
    for (const r of results) expect(r.contentType).toMatch(/^application\/json/);
    expect(results[3].json.result!.task!.status.state).toBe('TASK_STATE_WORKING');
    expect(results[4].json.result!.task!.status.state).toBe('TASK_STATE_WORKING');
    const text = await rpcPost(url, 'SendMessage', v1SendParams('as text/plain', { contextId: ctx() }), { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(text.contentType).toMatch(/^application\/json/);
    // a JSON-RPC error body, not a bare object (A2A v1.0 §9.5)
    expect(text.json).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32005, data: [{ reason: 'CONTENT_TYPE_NOT_SUPPORTED' }] } });
    expect(h.receiver.requests.length).toBe(hooks + 2);
    // the SDK sends application/json
    await sdk.listTasks({ tenant: '', contextId: ctx(), status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined });
    expect(wire.at(-1)!.headers['content-type']).toBe('application/json');
    expect(wire.at(-1)!.responseHeaders['content-type']).toMatch(/^application\/json/);
  });

  it('JSONRPC-SVC-001 method names are PascalCase (SendMessage, GetTask, ListTasks, CancelTask…); other spellings are -32601', async () => {
    const t = await working();
    const v1 = [
      ['GetTask', { id: t.id }],
      ['ListTasks', {}],
      ['SendMessage', v1SendParams('status', { contextId: t.contextId })],
      ['CancelTask', { id: t.id }],
    ] as const;
    for (const [m, p] of v1) expect((await call(m, p)).json.result, m).toBeDefined();
    for (const m of ['SendStreamingMessage', 'SubscribeToTask', 'GetExtendedAgentCard', 'CreateTaskPushNotificationConfig']) {
      expect((await call(m, {})).json.error!.code, m).not.toBe(-32601);
    }
    for (const m of ['sendMessage', 'send_message', 'getTask', 'SENDMESSAGE', 'tasks/list', 'GetTasks']) {
      const body = rpcBody(m, { id: t.id });
      expectV1Error(await post(url, body), body.id, -32601, 'METHOD_NOT_FOUND');
    }
    // the SDK's own calls use these names, and the server answers them
    await sdk.getTask({ tenant: '', id: t.id });
    expect(wire.at(-1)!.body!.method).toBe('GetTask');
    expect(wire.at(-1)!.response.result!.id).toBe(t.id);
  });

  it('JSONRPC-SVC-002 service parameters travel as HTTP headers: A2A-Version (sent by the SDK, honoured by the server) and A2A-Extensions (accepted)', async () => {
    const before = wire.length;
    await sdk.sendMessage(sdkSend('header check', { contextId: ctx() }));
    await sdk.getTask({ tenant: '', id: randomUUID() }).catch(() => undefined);
    for (const x of wire.slice(before)) {
      expect(x.headers['a2a-version']).toBe('1.0');
      expect(JSON.stringify(x.body)).not.toMatch(/a2a-?version/i);
    }
    // the same body answers differently depending only on the header
    const body = rpcBody('GetTask', { id: randomUUID() });
    expect((await post(url, body, { 'a2a-version': '1.0' })).json.error!.code).toBe(-32001);
    expect((await post(url, body, { 'a2a-version': '9.9' })).json.error!.code).toBe(-32009);
    expect((await post(url, body, { 'A2A-VERSION': '9.9', 'a2a-version': null })).json.error!.code).toBe(-32009);
    const ext = await call('SendMessage', v1SendParams('with extensions', { contextId: ctx() }), {
      'a2a-extensions': 'https://example.invalid/ext/one/v1, https://example.invalid/ext/two/v1',
    });
    expect(ext.json.result!.task!.status.state).toBe('TASK_STATE_WORKING');
  });

  it('JSONRPC-ERR-001 error responses use the JSON-RPC error object: integer code, string message, data an array of ProtoJSON Any', async () => {
    const errors = [
      await post(url, '{'),
      await post(url, JSON.stringify({ jsonrpc: '2.0', id: 1 })),
      await call('NoSuchMethod', {}),
      await call('SendMessage', { message: {} }),
      await call('GetTask', { id: randomUUID() }),
      await call('SubscribeToTask', { id: randomUUID() }),
    ];
    for (const r of errors) {
      expect(r.status).toBe(200);
      const e = r.json.error;
      expect(Number.isInteger(e!.code), r.text).toBe(true);
      expect(typeof e!.message).toBe('string');
      expect(Array.isArray(e!.data)).toBe(true);
      for (const any of e!.data!) expect(typeof any['@type']).toBe('string');
    }
  });

  it('JSONRPC-ERR-002 A2A-specific errors use codes in -32001…-32099; JSON-RPC ones the reserved codes', async () => {
    const done = await working('to complete');
    await appendReply(h, dovecot, done.id);
    await call('GetTask', { id: done.id });
    const a2a = [
      await call('GetTask', { id: randomUUID() }),
      await call('CancelTask', { id: done.id }),
      await call('GetTaskPushNotificationConfig', { taskId: done.id, id: 'none' }),
      await call('SubscribeToTask', { id: done.id }),
      await call('SendMessage', { message: { role: 'ROLE_USER', parts: [{ url: 'https://example.invalid/f' }], messageId: hex(16) } }),
      await call('GetTask', { id: randomUUID() }, { 'a2a-version': '3.0' }),
    ];
    for (const r of a2a) {
      expect(r.json.error!.code, r.text).toBeLessThanOrEqual(-32001);
      expect(r.json.error!.code).toBeGreaterThanOrEqual(-32099);
    }
    expect((await call('Nope', {})).json.error!.code).toBe(-32601);
    expect((await call('GetTask', {})).json.error!.code).toBe(-32602);
  });

  it('JSONRPC-ERR-003 A2A errors carry one google.rpc.ErrorInfo (UPPER_SNAKE_CASE reason, domain a2a-protocol.org)', async () => {
    const r = await call('GetTask', { id: randomUUID() });
    expect(r.json.error!.data).toEqual(errorInfo('TASK_NOT_FOUND'));
    const err = await rejection(() => sdk.getTask({ tenant: '', id: randomUUID() }));
    expect(err.data).toEqual(errorInfo('TASK_NOT_FOUND'));
    expect(err.reason).toBe('TASK_NOT_FOUND');
  });

  it('JSONRPC-SSE-002 (error-code mapping) each A2A error type has its code and reason on the wire and the SDK class it maps to', async () => {
    const done = await working('to complete for mapping');
    await appendReply(h, dovecot, done.id);
    expect((await call('GetTask', { id: done.id })).json.result!.status.state).toBe('TASK_STATE_COMPLETED');
    const table: [string, number, string, () => Promise<RawResult>, () => Promise<unknown>, new (...args: never[]) => Error][] = [
      ['TaskNotFoundError', -32001, 'TASK_NOT_FOUND', () => call('GetTask', { id: randomUUID() }), () => sdk.getTask({ tenant: '', id: randomUUID() }), TaskNotFoundError],
      ['TaskNotCancelableError', -32002, 'TASK_NOT_CANCELABLE', () => call('CancelTask', { id: done.id }), () => sdk.cancelTask({ tenant: '', id: done.id, metadata: undefined }), TaskNotCancelableError],
      // PushNotificationNotSupportedError (-32003) no longer occurs: capabilities.pushNotifications is true.
      [
        'UnsupportedOperationError',
        -32004,
        'UNSUPPORTED_OPERATION',
        () => call('SubscribeToTask', { id: done.id }),
        async () => {
          for await (const _ of sdk.resubscribeTask({ tenant: '', id: done.id })) void _;
        },
        UnsupportedOperationError,
      ],
      [
        'ContentTypeNotSupportedError',
        -32005,
        'CONTENT_TYPE_NOT_SUPPORTED',
        () => call('SendMessage', { message: { role: 'ROLE_USER', parts: [{ raw: 'AAEC', mediaType: 'image/png' }], messageId: hex(16) } }),
        () => {
          const req = sdkSend('x', { contextId: ctx() });
          req.message!.parts = [{ content: { $case: 'url', value: 'https://example.invalid/f.png' }, metadata: undefined, filename: '', mediaType: 'image/png' }];
          return sdk.sendMessage(req);
        },
        ContentTypeNotSupportedError,
      ],
      [
        'VersionNotSupportedError',
        -32009,
        'VERSION_NOT_SUPPORTED',
        () => call('GetTask', { id: done.id }, { 'a2a-version': '2.0' }),
        () => sdk.transport.getTask({ tenant: '', id: done.id }, { serviceParameters: { 'A2A-Version': '2.0' } }),
        VersionNotSupportedError,
      ],
    ];
    for (const [name, code, reason, raw, viaSdk, cls] of table) {
      const r = await raw();
      expect(r.json.error?.code, `${name}: ${r.text}`).toBe(code);
      expect(r.json.error!.data, name).toEqual(errorInfo(reason));
      const err = await rejection(viaSdk);
      expect(err, name).toBeInstanceOf(cls);
      expect(err.envelopeCode, name).toBe(code);
    }
    // The server's table agrees with the spec for every kind it can raise, including -32007.
    expect(ERRORS.extendedAgentCardNotConfigured).toMatchObject({ code: -32007, reason: 'EXTENDED_AGENT_CARD_NOT_CONFIGURED' });
    // …and its one error of its own (a per-agent cap, test/integration/core/door.test.ts) stays outside A2A's codes.
    expect(Object.values(ERRORS).map((e) => e.code).sort((a, b) => a - b)).toEqual([-32700, -32603, -32602, -32601, -32600, -32009, -32007, -32005, -32004, -32003, -32002, -32001, -31001]);
  });
});

describe('versioning (TCK §3.6.2)', () => {
  it('VER-SERVER-001 a request is processed in the requested version (1.0, 1, 1.0.0 → v1.0; 0.3, 0.3.0 → v0.3); routing is by method name (product rule)', async () => {
    for (const v of ['1.0', '1', '1.0.0']) {
      const r = await call('SendMessage', v1SendParams(`v1 as ${v}`, { contextId: ctx() }), { 'a2a-version': v });
      expect(r.json.result?.task?.status?.state, `${v}: ${r.text}`).toBe('TASK_STATE_WORKING');
      expect((r.json.result!.task as Record<string, unknown>).kind).toBeUndefined();
    }
    for (const v of ['0.3', '0.3.0']) {
      const r = await rpcPost(url, 'message/send', v03SendParams(`v0.3 as ${v}`, { contextId: ctx() }), { 'a2a-version': v });
      expect(r.json.result, `${v}: ${r.text}`).toMatchObject({ kind: 'task', status: { state: 'working' } });
    }
    // the error dialect of a method-less answer follows the header
    const unknown1 = rpcBody('Nope', {});
    expectV1Error(await post(url, unknown1, { 'a2a-version': '1.0' }), unknown1.id, -32601, 'METHOD_NOT_FOUND');
    const unknown03 = rpcBody('Nope', {});
    expectV03Error(await post(url, unknown03, { 'a2a-version': '0.3' }), unknown03.id, -32601);
    // product rule: a v1.0 method name answers in v1.0 shape under A2A-Version 0.3, and vice versa
    const mixed = await call('SendMessage', v1SendParams('v1 name, 0.3 header', { contextId: ctx() }), { 'a2a-version': '0.3' });
    expect(mixed.json.result!.task!.status.state).toBe('TASK_STATE_WORKING');
    const mixed2 = await rpcPost(url, 'message/send', v03SendParams('v0.3 name, 1.0 header', { contextId: ctx() }), { 'a2a-version': '1.0' });
    expect(mixed2.json.result).toMatchObject({ kind: 'task', status: { state: 'working' } });
  });

  it('VER-SERVER-002 an unsupported A2A-Version is VersionNotSupportedError (-32009, HTTP 200), and nothing is dispatched', async () => {
    const hooks = h.receiver.requests.length;
    const c = ctx();
    for (const v of ['2.0', '0.2', '1.1', '99.0', 'abc']) {
      const body = rpcBody('SendMessage', v1SendParams('versioned job', { contextId: c }));
      const r = await post(url, body, { 'a2a-version': v });
      expectV1Error(r, body.id, -32009, 'VERSION_NOT_SUPPORTED');
      expect(r.json.error!.message).toMatch(/1\.0/);
      const legacy = rpcBody('message/send', v03SendParams('versioned job', { contextId: c }));
      expectV03Error(await post(url, legacy, { 'a2a-version': v }), legacy.id, -32009);
    }
    expect(h.receiver.requests.length).toBe(hooks);
    expect((await call('ListTasks', { contextId: c })).json.result!.totalSize).toBe(0);
    const err = await rejection(() => sdk.transport.getTask({ tenant: '', id: randomUUID() }, { serviceParameters: { 'A2A-Version': '2.0' } }));
    expect(err).toBeInstanceOf(VersionNotSupportedError);
  });

  it('VER-SERVER-003 a missing or empty A2A-Version means 0.3 (v0.3 answers and errors); a v1.0 method name still answers in v1.0 shape (product rule)', async () => {
    for (const header of [{ 'a2a-version': null }, { 'a2a-version': '' }, { 'a2a-version': '  ' }]) {
      const what = JSON.stringify(header);
      const r = await rpcPost(url, 'message/send', v03SendParams('no version', { contextId: ctx() }), header);
      expect(r.json.result, `${what}: ${r.text}`).toMatchObject({ kind: 'task', status: { state: 'working' } });
      const unknown = rpcBody('Nope', {});
      expectV03Error(await post(url, unknown, header), unknown.id, -32601);
      const parse = await post(url, '{', header);
      expectV03Error(parse, null, -32700);
      const v1 = await rpcPost(url, 'SendMessage', v1SendParams('v1 name, no version', { contextId: ctx() }), header);
      expect(v1.json.result!.task!.status.state, what).toBe('TASK_STATE_WORKING');
    }
  });
});
