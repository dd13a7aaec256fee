/**
 * The call helpers the conformance files share, bound to a file's bridge: each factory takes a
 * reader of the file's Dovecot, harness and endpoint (set in its `beforeAll`, read when a helper is
 * called) and returns raw JSON-RPC calls and "start a task / answer it" steps.
 * - coreCalls: v1.0 calls to an endpoint (conformance-core-*.test.ts);
 * - wireCalls: v1.0 calls with headers, and the Agent Card (conformance-wire-*.test.ts);
 * - v03Calls: calls with `A2A-Version: 0.3` (conformance-v03*.test.ts).
 */
import { afterAll, beforeAll, expect } from 'vitest';
import type { V1Task } from '../../../src/a2a/wire.js';
import type { V03Task } from '../../../src/a2a/wire-v03.js';
import { hex, startHarness, type Harness, type HarnessOptions } from '../../helpers/bridge-harness.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import type { ResultOf, V03SendResult } from '../../helpers/rpc-json.js';
import type { PlannedResponse, RecordedRequest } from '../../helpers/webhook-receiver.js';
import { appendReply, ctx, rpcPost, v03SendParams, v1SendParams, type RawResult, type V1AgentCardJson, type WireExchange } from './conformance-helpers.js';

/** What a file's helpers read: its Dovecot, its harness and the endpoint they call by default. */
export interface Bridge {
  dovecot: DovecotHandle;
  h: Harness;
  url: string;
}

/** v1.0 calls to `bridge().url` (or another endpoint), as the CORE-* tests make them. */
export function coreCalls(bridge: () => Bridge) {
  /** A raw v1.0 call to the grok endpoint (or `url`). */
  function call<M extends string>(method: M, params?: unknown, url = bridge().url): Promise<RawResult<ResultOf<M>>> {
    return rpcPost(url, method, params);
  }

  /** Raw SendMessage of new work; asserts the answer is a WORKING task and returns it. */
  async function working(text = `Job ${hex(4)}`, o: { contextId?: string; url?: string } = {}): Promise<V1Task> {
    const r = await call('SendMessage', v1SendParams(text, { contextId: o.contextId ?? ctx() }), o.url);
    expect(r.json.result?.task?.status?.state, r.text).toBe('TASK_STATE_WORKING');
    return r.json.result!.task!;
  }

  /** A WORKING task answered by a genuine reply with `status`, then polled on its context; returns the polled task. */
  async function answered(status: 'done' | 'failed' | 'input-required' | 'rejected', answer = `Answer ${hex(4)}`, url = bridge().url): Promise<V1Task> {
    const t = await working(undefined, { url });
    const { h, dovecot } = bridge();
    await appendReply(h, dovecot, t.id, { status, answer });
    const polled = await call('SendMessage', v1SendParams('status', { contextId: t.contextId }), url);
    const expected = { done: 'TASK_STATE_COMPLETED', failed: 'TASK_STATE_FAILED', 'input-required': 'TASK_STATE_INPUT_REQUIRED', rejected: 'TASK_STATE_REJECTED' }[status];
    expect(polled.json.result!.task!.status.state, polled.text).toBe(expected);
    return polled.json.result!.task!;
  }

  /** Every task id the grok endpoint lists (all pages). */
  async function allListedIds(url = bridge().url): Promise<string[]> {
    const ids: string[] = [];
    let pageToken = '';
    do {
      const r = await call('ListTasks', { pageSize: 100, ...(pageToken ? { pageToken } : {}) }, url);
      ids.push(...r.json.result!.tasks.map((t: { id: string }) => t.id));
      pageToken = r.json.result!.nextPageToken;
    } while (pageToken);
    return ids;
  }

  return { call, working, answered, allListedIds };
}

/** v1.0 calls with chosen headers, and card reads, as the CARD/DM/JSONRPC/VER tests make them. */
export function wireCalls(bridge: () => Bridge) {
  function call<M extends string>(method: M, params?: unknown, headers: Record<string, string | null> = {}): Promise<RawResult<ResultOf<M>>> {
    return rpcPost(bridge().url, method, params, headers);
  }

  /** GET of a card path; the body read as a v1.0 card, or as `C` (the v0.3 card at `agent.json`). */
  async function getCard<C = V1AgentCardJson>(path: string, init?: RequestInit): Promise<{ status: number; type: string | null; card: C }> {
    // A v1.0 client says so (A2A v1.0 §3.6.1); without the header the v0.3 card comes (§3.6.2, docs/discovery.md).
    const res = await fetch(`${bridge().h.app.server.baseUrl}${path}`, { ...init, headers: { 'a2a-version': '1.0', ...(init?.headers as Record<string, string>) } });
    return { status: res.status, type: res.headers.get('content-type'), card: (await res.json()) as C };
  }

  /** Raw SendMessage of new work; returns the WORKING task. */
  async function working(text = `Job ${hex(4)}`): Promise<V1Task> {
    const r = await call('SendMessage', v1SendParams(text, { contextId: ctx() }));
    expect(r.json.result?.task?.status?.state, r.text).toBe('TASK_STATE_WORKING');
    return r.json.result!.task!;
  }

  return { call, getCard, working };
}

/** Webhooks answer at once, except for "SLOW" jobs (1.5 s), so returnImmediately/blocking:false can be seen. */
export const v03Respond = (r: RecordedRequest): PlannedResponse => ({
  status: r.verified ? 202 : 401,
  ...(r.envelope?.ask.startsWith('SLOW') ? { delayMs: 1500 } : {}),
});

/** v0.3 calls (`A2A-Version: 0.3`), and the last exchange of the legacy SDK client logged in `wire`. */
export function v03Calls(bridge: () => Bridge, wire: WireExchange<V03SendResult>[]) {
  /** A raw v0.3 call (`A2A-Version: 0.3`). */
  function call<M extends string>(method: M, params?: unknown, headers: Record<string, string | null> = {}): Promise<RawResult<ResultOf<M>>> {
    return rpcPost(bridge().url, method, params, { 'a2a-version': '0.3', ...headers });
  }

  /** Raw message/send of new work; asserts a bare `working` task and returns it. */
  async function working(text = `Job ${hex(4)}`, contextId = ctx()): Promise<V03Task> {
    const r = await call('message/send', v03SendParams(text, { contextId }));
    expect(r.json.result, r.text).toMatchObject({ kind: 'task', status: { state: 'working' } });
    return r.json.result as V03Task; // a Task: `kind` was just checked
  }

  /** A task answered by a genuine reply, then read with tasks/get. */
  async function answered(status: 'done' | 'failed' | 'input-required' | 'rejected', answer = `Answer ${hex(4)}`): Promise<V03Task> {
    const t = await working();
    const { h, dovecot } = bridge();
    await appendReply(h, dovecot, t.id, { status, answer });
    const r = await call('tasks/get', { id: t.id });
    expect(r.json.result!.status.state, r.text).toBe({ done: 'completed', failed: 'failed', 'input-required': 'input-required', rejected: 'rejected' }[status]);
    return r.json.result!;
  }

  /** The last exchange the legacy SDK client made. */
  function lastWire(): WireExchange<V03SendResult> {
    const x = wire.at(-1);
    if (!x) throw new Error('the legacy client sent nothing');
    return x;
  }

  return { call, working, answered, lastWire };
}

/**
 * One conformance file's bridge: a private Dovecot and one harness (options `o`) started before the
 * file's tests and both stopped after them; `ready` gets them once started, for the file's own
 * setup (its endpoints and SDK clients).
 */
export function useConformanceBridge(o: Omit<HarnessOptions, 'dovecot'>, ready: (b: { dovecot: DovecotHandle; h: Harness }) => Promise<void>): void {
  let dovecot: DovecotHandle | undefined;
  let h: Harness | undefined;
  beforeAll(async () => {
    dovecot = await startDovecot();
    h = await startHarness({ ...o, dovecot });
    await ready({ dovecot, h });
  });
  afterAll(async () => {
    await h?.close();
    await dovecot?.stop();
  });
}
