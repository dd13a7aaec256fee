/**
 * The Agent Card (CARD-*) and data model (DM-*) requirements of the public A2A conformance kit
 * (TCK, `tck/requirements/{agent_card,data_model}.py`) that apply to a JSON-RPC server without
 * streaming or push; through the @a2a-js/sdk v1.0 client and raw JSON-RPC. The JSON-RPC binding
 * and versioning are in conformance-wire-rpc.test.ts.
 *
 * Product rule (docs/architecture.md, "Context rules"): the two grammars never overlap, so the
 * server routes by method name — a v1.0 method name answers in v1.0 shape whatever `A2A-Version`
 * says, and a v0.3 name in v0.3 shape. The header decides the dialect of answers that have no
 * method to go by (a parse error, an unknown method) and refuses unsupported versions.
 */
import { Role, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { hex, type Harness } from '../../helpers/bridge-harness.js';
import type { DovecotHandle } from '../../helpers/dovecot.js';
import type { Artifact, Message, Task } from '@a2a-js/sdk';
import type { ProtoJson } from '../../../src/a2a/proto-json.js';
import type { V1ListTasksResult, V1Task } from '../../../src/a2a/wire.js';
import type { EitherOf, RpcAnswer, V1SendResult } from '../../helpers/rpc-json.js';
import {
  appendReply, asTask, ctx, expectV03Error, expectV1Error, ISO_Z, keysOf, post, recordingFetch,
  rpcBody, sdkSend, sdkV1Client, v1SendParams, V1_STATES, type RawResult, type V03AgentCardJson,
  type WireExchange,
} from './conformance-helpers.js';
import { useConformanceBridge, wireCalls } from './conformance-calls.js';

let dovecot: DovecotHandle;
let h: Harness;
let sdk: Client;
const wire: WireExchange<EitherOf<V1Task, V1SendResult>>[] = [];
let url: string;

useConformanceBridge({}, async (b) => {
  ({ dovecot, h } = b);
  url = h.endpoint;
  sdk = await sdkV1Client(url, wire);
});

const { call, getCard, working } = wireCalls(() => ({ dovecot, h, url }));

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
    // A GET route answers HEAD too, so its 405 says so (RFC 9110 §10.2.1).
    for (const target of [`${url}/.well-known/agent-card.json`, `${h.app.server.baseUrl}/.well-known/agent-card.json`, `${h.app.server.baseUrl}/health`]) {
      const refused = await fetch(target, { method: 'POST' });
      expect([refused.status, refused.headers.get('allow')], target).toEqual([405, 'GET, HEAD']);
    }
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
