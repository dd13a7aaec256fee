import type { App } from '../../src/app.js';
import type { Envelope } from '../../src/downlink/envelope.js';
import { hermesBody, hex } from './bridge-harness.js';
import { TEST_BEARER } from './config-dir.js';
import type { WebhookReceiver } from './webhook-receiver.js';

/** A JSON-RPC call (A2A-Version 1.0, the test bearer) to `app`'s first agent; its `result`. */
export async function rpcResult<T>(app: App, body: unknown): Promise<T> {
  const res = await fetch(app.server.endpoint(app.bridge.ctx.config.agents[0]!), {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}`, 'a2a-version': '1.0' },
    body: JSON.stringify(body),
  });
  return ((await res.json()) as { result: T }).result;
}

/** A new task of `text` in a fresh context, sent as Hermes sends it, with the envelope its webhook carried to `receiver`. */
export async function newTaskVia(app: App, receiver: WebhookReceiver, text: string): Promise<{ id: string; ctx: string; envelope: Envelope }> {
  const ctx = `ctx-${hex(8)}`;
  const { task } = await rpcResult<{ task: { id: string } }>(app, hermesBody(text, ctx));
  const envelope = receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === task.id)!;
  return { id: task.id, ctx, envelope };
}
