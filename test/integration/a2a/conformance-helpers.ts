/**
 * Shared helpers of the A2A conformance tests: the two @a2a-js/sdk clients (v1.0, and v0.3 through
 * the SDK's legacy transport), a raw JSON-RPC POST with full control of the headers, builders for
 * the SDK's proto-shaped requests, and small waits. Requirement IDs and texts come from the public
 * A2A TCK (`tck/requirements/*.py`).
 */
import { Role, type AgentCard, type Message, type SendMessageRequest, type Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import type { LegacyRestTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import type { JsonRpcA2AError } from '@a2a-js/sdk/errors';
import type { ProtoJson } from '../../../src/a2a/proto-json.js';
import { expect } from 'vitest';
import type { TaskChanged } from '../../../src/core/events.js';
import type { Envelope } from '../../../src/downlink/envelope.js';
import type { ReplyStatus } from '../../../src/demo/reply-mail.js';
import { hex, type Harness } from '../../helpers/bridge-harness.js';
import { TEST_BEARER } from '../../helpers/config-dir.js';
import type { DovecotHandle } from '../../helpers/dovecot.js';
import type { ResultOf, RpcAnswer } from '../../helpers/rpc-json.js';

/** A JSON-RPC request as an SDK client sent it; `params` is read member by member, as JSON. */
export interface WireRequest<P = WireParams> {
  jsonrpc: string;
  id: string | number | null;
  method: string;
  params: P;
}

/** The JSON members the tests read in the params an SDK client sends (v1.0 and v0.3). */
export interface WireParams {
  id?: string;
  historyLength?: number;
  message?: { kind?: string; role?: string; parts: { kind?: string; text?: string }[] };
  configuration?: { blocking?: boolean; returnImmediately?: boolean };
}

/** The v1.0 Agent Card as JSON: the SDK's `AgentCard` in ProtoJSON form. */
export type V1AgentCardJson = ProtoJson<AgentCard>;
/** The v0.3 Agent Card: the SDK's v0.3 type, as its public v0.3 REST handler answers it. */
export type V03AgentCardJson = Awaited<ReturnType<LegacyRestTransportHandler['getAuthenticatedExtendedAgentCard']>>;

/** One HTTP exchange an SDK client made, as it went over the wire. */
export interface WireExchange<R = unknown> {
  url: string;
  method: string;
  /** Request headers, lower-case names. */
  headers: Record<string, string>;
  /** The request body parsed as JSON (null for a GET). */
  body: WireRequest | null;
  status: number;
  responseHeaders: Record<string, string>;
  /** The response body parsed as JSON (the text when it does not parse). */
  response: RpcAnswer<R>;
}

/** A fetch that adds the bridge bearer and records every exchange (body and answer) in `log`. */
export function recordingFetch(log: WireExchange[]): typeof fetch {
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${TEST_BEARER}`);
    const res = await fetch(input, { ...init, headers });
    const text = await res.clone().text();
    let response: unknown;
    try {
      response = JSON.parse(text);
    } catch {
      response = text;
    }
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    log.push({
      url,
      method: init?.method ?? 'GET',
      headers: Object.fromEntries([...headers.entries()]),
      body: typeof init?.body === 'string' ? (JSON.parse(init.body) as WireRequest) : null,
      status: res.status,
      responseHeaders: Object.fromEntries([...res.headers.entries()]),
      response: response as RpcAnswer,
    });
    return res;
  };
}

/** An SDK v1.0 client built from the agent's card (`/.well-known/agent-card.json` under `endpoint`). */
export async function sdkV1Client(endpoint: string, log: WireExchange[] = []): Promise<Client> {
  const fetchImpl = recordingFetch(log);
  return new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl })] }),
  ).createFromUrl(`${endpoint}/`);
}

/**
 * An SDK client on the v0.3 legacy transport: the card resolver and the JSON-RPC transport
 * factory both run with `legacyCompat`, and the card is the legacy one at `/.well-known/agent.json`.
 * @param cardBase the URL the card path is resolved against (the agent path, or the server root)
 */
export async function sdkV03Client(cardBase: string, log: WireExchange[] = []): Promise<Client> {
  const fetchImpl = recordingFetch(log);
  return new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }),
    }),
  ).createFromUrl(cardBase.endsWith('/') ? cardBase : `${cardBase}/`, '.well-known/agent.json');
}

export interface RawResult<R = unknown> {
  status: number;
  contentType: string | null;
  /** The body as a JSON-RPC answer (`undefined` when it is not JSON: a test reading it then fails). */
  json: RpcAnswer<R>;
  text: string;
  ms: number;
}

/**
 * A raw POST to `url`. `headers` replaces the defaults key by key; a value of `null` removes that
 * header (to send no `A2A-Version`, pass `{ 'a2a-version': null }`).
 */
export async function post<R = unknown>(url: string, body: unknown, headers: Record<string, string | null> = {}): Promise<RawResult<R>> {
  const merged: Record<string, string | null> = {
    'content-type': 'application/json',
    authorization: `Bearer ${TEST_BEARER}`,
    'a2a-version': '1.0',
    ...headers,
  };
  const sent: Record<string, string> = {};
  for (const [k, v] of Object.entries(merged)) if (v !== null) sent[k] = v;
  const started = performance.now();
  const res = await fetch(url, { method: 'POST', headers: sent, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  const ms = performance.now() - started;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, contentType: res.headers.get('content-type'), json: json as RpcAnswer<R>, text, ms };
}

let rpcIds = 0;

/** A JSON-RPC 2.0 request object. */
export function rpcBody<M extends string>(method: M, params?: unknown, id: string | number = `conf-${++rpcIds}`) {
  return params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params };
}

export interface SendOpts {
  contextId?: string;
  taskId?: string;
  messageId?: string;
  configuration?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
}

/** v1.0 SendMessage params with one text part. */
export function v1SendParams(text: string, o: SendOpts = {}) {
  const message: Record<string, unknown> = { role: 'ROLE_USER', parts: [{ text, mediaType: 'text/plain' }], messageId: o.messageId ?? hex(16) };
  if (o.contextId !== undefined) message.contextId = o.contextId;
  if (o.taskId !== undefined) message.taskId = o.taskId;
  const params: Record<string, unknown> = { message };
  if (o.configuration) params.configuration = o.configuration;
  if (o.metadata) params.metadata = o.metadata;
  return params;
}

/** v0.3 message/send params with one text part (`kind` tags, role `user`). */
export function v03SendParams(text: string, o: SendOpts = {}) {
  const message: Record<string, unknown> = { kind: 'message', role: 'user', parts: [{ kind: 'text', text }], messageId: o.messageId ?? hex(16) };
  if (o.contextId !== undefined) message.contextId = o.contextId;
  if (o.taskId !== undefined) message.taskId = o.taskId;
  const params: Record<string, unknown> = { message };
  if (o.configuration) params.configuration = o.configuration;
  return params;
}

/** The SDK's proto-shaped SendMessageRequest with one text part. */
export function sdkSend(
  text: string,
  o: { contextId?: string; taskId?: string; messageId?: string; returnImmediately?: boolean; historyLength?: number } = {},
): SendMessageRequest {
  return {
    tenant: '',
    message: {
      messageId: o.messageId ?? hex(16),
      contextId: o.contextId ?? '',
      taskId: o.taskId ?? '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: {
      acceptedOutputModes: [],
      taskPushNotificationConfig: undefined,
      returnImmediately: o.returnImmediately ?? false,
      ...(o.historyLength !== undefined ? { historyLength: o.historyLength } : {}),
    },
    metadata: undefined,
  };
}

/** Narrows an SDK SendMessage result to a Task (fails the test when it is a Message). */
export function asTask(r: Task | Message): Task {
  expect('status' in r, `expected a Task, got ${JSON.stringify(r)}`).toBe(true);
  return r as Task;
}

/** Narrows an SDK SendMessage result to a Message (fails the test when it is a Task). */
export function asMessage(r: Task | Message): Message {
  expect('status' in r, `expected a Message, got ${JSON.stringify(r)}`).toBe(false);
  expect(typeof (r as Message).messageId).toBe('string');
  return r as Message;
}

/** The text values of an SDK part list. */
export function sdkTexts(parts: { content?: { $case: string; value: unknown } | undefined }[]): string[] {
  return parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value as string] : []));
}

/** An error an SDK client call rejected with; the JSON-RPC members are there when the SDK set them. */
export type SdkError = Error & Partial<JsonRpcA2AError>;

/** Calls `fn`, expecting a rejection; returns the error. @throws when `fn` succeeds or rejects with a non-Error */
export async function rejection(fn: () => Promise<unknown>): Promise<SdkError> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof Error) return err;
    throw new Error(`expected an Error, the call rejected with ${String(err)}`, { cause: err });
  }
  throw new Error('expected the call to fail, it succeeded');
}

/** A raw JSON-RPC call typed by its method: the answer reads as that method's result. */
export function rpcPost<M extends string>(url: string, method: M, params?: unknown, headers: Record<string, string | null> = {}): Promise<RawResult<ResultOf<M>>> {
  return post<ResultOf<M>>(url, rpcBody(method, params), headers);
}

/** The `google.rpc.ErrorInfo` a v1.0 error carries (A2A v1.0 §9.5). */
export function errorInfo(reason: string) {
  return [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-protocol.org' }];
}

/**
 * Asserts a v1.0 JSON-RPC error answer: HTTP 200, `jsonrpc` "2.0", the id echoed, the code, a
 * non-empty message, and (unless `reason` is null) exactly one ErrorInfo with that reason.
 */
export function expectV1Error(r: RawResult, id: unknown, code: number, reason: string | null): void {
  expect(r.status, r.text).toBe(200);
  expect(r.json, r.text).toMatchObject({ jsonrpc: '2.0', id, error: { code } });
  expect(r.json.result).toBeUndefined();
  expect(typeof r.json.error!.message).toBe('string');
  expect(r.json.error!.message.length).toBeGreaterThan(0);
  if (reason !== null) expect(r.json.error!.data).toEqual(errorInfo(reason));
}

/** Asserts a v0.3 JSON-RPC error answer: code, message, and no ErrorInfo `data` (v0.3 has none). */
export function expectV03Error(r: RawResult, id: unknown, code: number): void {
  expect(r.status, r.text).toBe(200);
  expect(r.json, r.text).toMatchObject({ jsonrpc: '2.0', id, error: { code } });
  expect(r.json.result).toBeUndefined();
  expect(r.json.error!.message.length).toBeGreaterThan(0);
  expect('data' in r.json.error!).toBe(false);
}

/** The latest webhook envelope the receiver got for `taskId`. */
export function envelopeOf(h: Harness, taskId: string): Envelope {
  const e = h.receiver.requests.flatMap((r) => (r.envelope?.task_id === taskId ? [r.envelope] : [])).at(-1);
  if (!e) throw new Error(`no webhook for task ${taskId}`);
  return e;
}

/** The number of webhook POSTs the receiver got for `taskId` (dispatches and retries). */
export function webhooksFor(h: Harness, taskId: string): number {
  return h.receiver.requests.filter((r) => r.envelope?.task_id === taskId).length;
}

/** Appends a genuine signed reply to the task's latest turn. */
export async function appendReply(
  h: Harness,
  dovecot: DovecotHandle,
  taskId: string,
  o: { status?: ReplyStatus; answer?: string } = {},
): Promise<void> {
  await dovecot.append(await h.reply(envelopeOf(h, taskId), { status: o.status ?? 'done', answer: o.answer ?? 'Here is the result.' }));
}

/** The bridge's next event moving a task of context `contextId` to WORKING (subscribe before the call that creates it). */
export function workingOn(h: Harness, contextId: string): Promise<TaskChanged> {
  return h.app.bridge.events.next((e) => e.task.contextId === contextId && e.task.state === 'WORKING');
}

/** A fresh context id. */
export function ctx(): string {
  return `ctx-${hex(8)}`;
}

/** Every key of a JSON value, recursively, skipping the contents of `metadata` maps (free-form). */
export function keysOf(v: unknown, out: string[] = []): string[] {
  if (Array.isArray(v)) for (const x of v) keysOf(x, out);
  else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      out.push(k);
      if (k !== 'metadata') keysOf(x, out);
    }
  }
  return out;
}

/** A task id the bridge generates (UUID v4, lower case). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** The default untrusted label of the harness's agent `grok`. */
export const LABEL = '[UNTRUSTED — grok reply, verify before acting]';

export const V1_STATES = [
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_AUTH_REQUIRED',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
];

export const V03_STATES = ['submitted', 'working', 'input-required', 'auth-required', 'completed', 'failed', 'canceled', 'rejected'];

/** ISO 8601 in UTC with `Z` (A2A v1.0 §5.6.1). */
export const ISO_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z$/;
