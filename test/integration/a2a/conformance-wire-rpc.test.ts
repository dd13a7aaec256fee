/**
 * The JSON-RPC binding (JSONRPC-*) and versioning (VER-SERVER-*) requirements of the public A2A
 * conformance kit (TCK, `tck/requirements/{binding_jsonrpc,versioning}.py`) that apply to a
 * JSON-RPC server without streaming or push; through the @a2a-js/sdk v1.0 client and raw JSON-RPC.
 * The Agent Card and data model are in conformance-wire-card.test.ts.
 *
 * Product rule (docs/architecture.md, "Context rules"): the two grammars never overlap, so the
 * server routes by method name — a v1.0 method name answers in v1.0 shape whatever `A2A-Version`
 * says, and a v0.3 name in v0.3 shape. The header decides the dialect of answers that have no
 * method to go by (a parse error, an unknown method) and refuses unsupported versions.
 */
import { TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import {
  ContentTypeNotSupportedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
  VersionNotSupportedError,
} from '@a2a-js/sdk/errors';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ERRORS } from '../../../src/a2a/errors.js';
import { hex, type Harness } from '../../helpers/bridge-harness.js';
import type { DovecotHandle } from '../../helpers/dovecot.js';
import type { V1Task } from '../../../src/a2a/wire.js';
import type { EitherOf, V1SendResult } from '../../helpers/rpc-json.js';
import {
  appendReply, ctx, errorInfo, expectV03Error, expectV1Error, post, rejection, rpcBody, rpcPost,
  sdkSend, sdkV1Client, v03SendParams, v1SendParams, type RawResult, type WireExchange,
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

const { call, working } = wireCalls(() => ({ dovecot, h, url }));

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
    // over server.max_body_bytes (1 MiB by default): 413, and still a JSON-RPC error a client can read
    const huge = await rpcPost(url, 'SendMessage', v1SendParams('x'.repeat(1024 * 1024), { contextId: ctx() }));
    expect(huge.status).toBe(413);
    expect(huge.contentType).toMatch(/^application\/json/);
    expect(huge.json).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600, data: [{ reason: 'INVALID_REQUEST' }] } });
    expect(huge.json.error!.message).toContain('server.max_body_bytes');
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
    // A near miss of a v1.0 name is told that name; a v0.3 name is not (another dialect), nor is a far one.
    const near: Record<string, string> = { sendMessage: 'SendMessage', send_message: 'SendMessage', getTask: 'GetTask', SENDMESSAGE: 'SendMessage', GetTasks: 'GetTask', SendMesage: 'SendMessage' };
    for (const m of ['sendMessage', 'send_message', 'getTask', 'SENDMESSAGE', 'tasks/list', 'GetTasks', 'SendMesage', 'Nothing']) {
      const body = rpcBody(m, { id: t.id });
      const r = await post(url, body);
      expectV1Error(r, body.id, -32601, 'METHOD_NOT_FOUND');
      expect(r.json.error!.message, m).toBe(`Method not found: ${m}${near[m] ? `; did you mean ${near[m]}?` : ''}`);
    }
    // Under A2A-Version 0.3 the suggestion comes from the v0.3 names only.
    expect((await post(url, rpcBody('message/sned', {}), { 'a2a-version': '0.3' })).json.error!.message).toBe('Method not found: message/sned; did you mean message/send?');
    expect((await post(url, rpcBody('SendMesage', {}), { 'a2a-version': '0.3' })).json.error!.message).toBe('Method not found: SendMesage');
    // The name is cut in the message, and a long one is not compared.
    const long = rpcBody(`SendMessage${'x'.repeat(200)}`, {});
    expect((await post(url, long)).json.error!.message).toBe(`Method not found: SendMessage${'x'.repeat(69)}`);
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
