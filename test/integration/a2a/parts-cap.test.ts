import { describe, expect, it } from 'vitest';
import { MAX_MESSAGE_PARTS } from '../../../src/a2a/params.js';
import { hex, useHarness } from '../../helpers/bridge-harness.js';

/**
 * The cap on a caller's message parts (src/a2a/params.ts MAX_MESSAGE_PARTS, README "Limits"): a
 * message over it is refused with invalid params (-32602) naming the limit, in both dialects and
 * on the streaming methods, before anything is stored or sent; a message at the cap goes through.
 */

const suite = useHarness({});

type RpcError = { error?: { code: number; message: string }; result?: unknown };

/** A send body of `n` one-character text parts (`kind` tags for v0.3). */
function sendBody(method: string, n: number, v03: boolean) {
  const part = v03 ? { kind: 'text', text: 'a' } : { text: 'a' };
  return {
    jsonrpc: '2.0',
    id: 1,
    method,
    params: {
      message: { ...(v03 ? { kind: 'message' } : {}), role: v03 ? 'user' : 'ROLE_USER', messageId: hex(16), contextId: `ctx-${hex(8)}`, parts: Array.from({ length: n }, () => part) },
      configuration: v03 ? { blocking: false } : { returnImmediately: true },
    },
  };
}

const refusal = `message.parts has ${MAX_MESSAGE_PARTS + 1} parts; a message may have at most ${MAX_MESSAGE_PARTS}: join the text into fewer parts, or send the items as one data part`;

describe(`a message of more than ${MAX_MESSAGE_PARTS} parts`, () => {
  it('is refused with -32602 naming the limit by SendMessage, SendStreamingMessage, message/send and message/stream; nothing is dispatched', async () => {
    const { h } = suite;
    expect(MAX_MESSAGE_PARTS).toBe(1000);
    const before = h.receiver.requests.length;
    for (const [method, v03] of [
      ['SendMessage', false],
      ['SendStreamingMessage', false],
      ['message/send', true],
      ['message/stream', true],
    ] as const) {
      const r = await h.rpc(sendBody(method, MAX_MESSAGE_PARTS + 1, v03), { 'a2a-version': v03 ? '0.3' : '1.0', accept: 'application/json, text/event-stream' });
      expect(r.status, method).toBe(200);
      expect((r.json as RpcError).error, method).toMatchObject({ code: -32602, message: refusal });
    }
    // Through the official SDK client as well (its in-memory message form).
    const parts = Array.from({ length: MAX_MESSAGE_PARTS + 1 }, () => ({ content: { $case: 'text', value: 'a' }, mediaType: 'text/plain' }));
    await expect(h.client.sendMessage({ message: { role: 1, parts, messageId: hex(16), contextId: `ctx-${hex(8)}` } } as never)).rejects.toThrow(refusal);
    expect(h.receiver.requests).toHaveLength(before);
  });

  it(`${MAX_MESSAGE_PARTS} parts are accepted in both dialects, and the agent's ask carries every one`, async () => {
    const { h } = suite;
    const v1 = await h.rpc(sendBody('SendMessage', MAX_MESSAGE_PARTS, false));
    const v1Task = (v1.json as { result: { task: { id: string } } }).result.task;
    expect(v1Task.id).toMatch(/^[0-9a-f-]{36}$/);
    const v03 = await h.rpc(sendBody('message/send', MAX_MESSAGE_PARTS, true), { 'a2a-version': '0.3' });
    const v03Task = (v03.json as { result: { kind: string; id: string } }).result;
    expect(v03Task.kind).toBe('task');
    await h.app.bridge.idle();
    const asked = h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === v1Task.id)!;
    expect(JSON.stringify(asked)).toContain(Array.from({ length: MAX_MESSAGE_PARTS }, () => 'a').join('\\n'));
  });
});
