import { randomUUID } from 'node:crypto';
import { JsonText, type Handler } from './call.js';
import { A2AError } from './errors.js';
import { parseListParams, parseSendParams, parseTaskIdParams } from './params.js';
import type { TaskView } from '../core/task-view.js';
import { v1AgentText, v1Task, type V1ListTasksResult, type V1SendMessageResult } from './wire.js';
import { v03AgentText, v03Task } from './wire-v03.js';
import { V03_PUSH_METHODS, V1_PUSH_METHODS } from './methods-push.js';
import { V03_STREAM_METHODS, V1_STREAM_METHODS } from './methods-stream.js';

/**
 * GetTask's answer of a view, serialised once per view object and dialect: a view from the view
 * cache (core/view-cache.ts) is the same object on every call while it is valid — a commit here or
 * by another process, or a second of the clock for a view that counts time, makes a new one — and
 * is never changed. The server sends the text as it is (src/a2a/jsonrpc.ts `resultText`).
 */
const v1Of = new WeakMap<TaskView, JsonText>();
const v03Of = new WeakMap<TaskView, JsonText>();
const memo = (m: WeakMap<TaskView, JsonText>, view: TaskView, render: (v: TaskView) => unknown): JsonText => {
  let w = m.get(view);
  if (!w) m.set(view, (w = new JsonText(JSON.stringify(render(view)))));
  return w;
};

/** GetTask's v1.0 answer of a view (one function for every call: a call makes no closure). */
const v1Answer = (view: TaskView): JsonText => memo(v1Of, view, v1Task);
/** GetTask's v0.3 answer of a view. */
const v03Answer = (view: TaskView): JsonText => memo(v03Of, view, v03Task);

/** `f` of a value that may still be coming (Bridge.get answers at once when nothing is due). */
const then = <T, R>(x: T | Promise<T>, f: (v: T) => R): R | Promise<R> => (x instanceof Promise ? x.then(f) : f(x));

/** The A2A v1.0 JSON-RPC methods (A2A v1.0 §9.4). */
export const V1_METHODS: Readonly<Record<string, Handler>> = {
  SendMessage: async (bridge, params, c) => {
    const p = parseSendParams(params, ['ROLE_USER']);
    const r = await bridge.send(c.agent, { ...p.message, caller: c.caller }, { returnImmediately: p.returnImmediately, historyLength: p.historyLength });
    if ('message' in r) return { message: v1AgentText(r.message.contextId, r.message.text, randomUUID()) } satisfies V1SendMessageResult;
    return { task: v1Task(r.task) } satisfies V1SendMessageResult;
  },
  GetTask: (bridge, params, c) => {
    const p = parseTaskIdParams(params);
    return then(bridge.get(c.agent, p.id, p.historyLength), v1Answer);
  },
  ListTasks: async (bridge, params, c) => {
    const p = parseListParams(params);
    const r = await bridge.list(c.agent, {
      contextId: p.contextId,
      state: p.state,
      updatedAfter: p.updatedAfter,
      pageSize: p.pageSize,
      pageToken: p.pageToken,
      historyLength: p.historyLength,
      includeArtifacts: p.includeArtifacts,
    });
    return {
      tasks: r.tasks.map((t) => v1Task(t, { includeArtifacts: p.includeArtifacts })),
      nextPageToken: r.nextPageToken,
      pageSize: p.pageSize,
      totalSize: r.totalSize,
    } satisfies V1ListTasksResult;
  },
  CancelTask: async (bridge, params, c) => v1Task(await bridge.cancel(c.agent, parseTaskIdParams(params).id)),
  ...V1_STREAM_METHODS,
  ...V1_PUSH_METHODS,
  // A2A v1.0 §3.3.4 (CORE-CAP-003): capabilities.extendedAgentCard is false ⇒ UnsupportedOperationError.
  GetExtendedAgentCard: () =>
    Promise.reject(new A2AError('unsupportedOperation', 'this agent has no extended card (capabilities.extendedAgentCard is false)')),
};

/**
 * The A2A v0.3 JSON-RPC methods: bare results in v0.3 shapes. The grammars never overlap
 * (docs/architecture.md, "Context rules").
 */
export const V03_METHODS: Readonly<Record<string, Handler>> = {
  'message/send': async (bridge, params, c) => {
    const p = parseSendParams(params, ['user']);
    const r = await bridge.send(c.agent, { ...p.message, caller: c.caller }, { returnImmediately: p.returnImmediately, historyLength: p.historyLength });
    if ('message' in r) return v03AgentText(r.message.contextId, r.message.text, randomUUID());
    return v03Task(r.task);
  },
  'tasks/get': (bridge, params, c) => {
    const p = parseTaskIdParams(params);
    return then(bridge.get(c.agent, p.id, p.historyLength), v03Answer);
  },
  'tasks/cancel': async (bridge, params, c) => v03Task(await bridge.cancel(c.agent, parseTaskIdParams(params).id)),
  ...V03_STREAM_METHODS,
  ...V03_PUSH_METHODS,
  'agent/getAuthenticatedExtendedCard': () =>
    Promise.reject(new A2AError('unsupportedOperation', 'this agent has no extended card (supportsAuthenticatedExtendedCard is false)')),
};

/** A method found by name: its handler, its dialect, and whether it answers with a stream. */
export interface FoundMethod {
  handler: Handler;
  dialect: '1.0' | '0.3';
  streams: boolean;
}

/** Every method by name, built once (the two grammars never share a name). */
const BY_NAME = new Map<string, FoundMethod>([
  ...Object.entries(V1_METHODS).map(([name, handler]): [string, FoundMethod] => [name, { handler, dialect: '1.0', streams: Object.hasOwn(V1_STREAM_METHODS, name) }]),
  ...Object.entries(V03_METHODS).map(([name, handler]): [string, FoundMethod] => [name, { handler, dialect: '0.3', streams: Object.hasOwn(V03_STREAM_METHODS, name) }]),
]);

/**
 * Resolves a method name to its handler and dialect; undefined for an unknown method. `streams`
 * marks the methods that answer with a stream (they count against `server.max_streams_per_caller`).
 */
export function findMethod(method: string): FoundMethod | undefined {
  return BY_NAME.get(method);
}

/** The longest method name {@link suggestMethod} compares, in UTF-16 units: the served names are under 40, so the work stays bounded. */
const SUGGEST_MAX_CHARS = 64;
/** The most edits (insert, delete, substitute one character; case ignored) a name may be from the method suggested. */
const SUGGEST_MAX_EDITS = 2;

/** Levenshtein distance of `a` and `b` (two rows; O(|a|·|b|), both at most {@link SUGGEST_MAX_CHARS} here). */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}

/**
 * The served method `name` is most likely a mistyping of: the nearest, within
 * {@link SUGGEST_MAX_EDITS} edits ignoring case, among the methods of `dialect` (both dialects
 * when null: a caller that sent no A2A-Version). Null for no such method, or a name over
 * {@link SUGGEST_MAX_CHARS} characters. The answer is one of our own names, never the caller's text.
 */
export function suggestMethod(name: string, dialect: '1.0' | '0.3' | null): string | null {
  if (name.length > SUGGEST_MAX_CHARS) return null;
  const asked = name.toLowerCase();
  let best: string | null = null;
  let bestEdits = SUGGEST_MAX_EDITS + 1;
  for (const [served, m] of BY_NAME) {
    if (dialect !== null && m.dialect !== dialect) continue;
    const edits = editDistance(asked, served.toLowerCase());
    if (edits < bestEdits) [best, bestEdits] = [served, edits];
  }
  return best;
}
