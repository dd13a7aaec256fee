import { describe, expect, it } from 'vitest';
import type { BridgeContext } from '../../../src/core/context.js';
import { THREAD_MAX_BYTES } from '../../../src/core/envelope-thread.js';
import type { Envelope } from '../../../src/downlink/envelope.js';
import { agentAsks, send, submitContext } from '../../helpers/submit-context.js';

const envelope = (ctx: BridgeContext, taskId: string, turn: number): { bytes: number; e: Envelope } => {
  const raw = ctx.store.turns.get(taskId, turn)!.envelope;
  return { bytes: raw.length, e: JSON.parse(raw.toString('utf8')) as Envelope };
};

describe('the envelope thread: newest turns whole, within a byte budget', () => {
  it('keeps each envelope under its ask plus the budget, cuts the entry at the budget at a character boundary and counts what it left out', () => {
    const ctx = submitContext();
    const first = send(ctx, 'a'.repeat(200_000));
    const taskId = (first as { task: { id: string } }).task.id;
    const r1 = 'é'.repeat(100_000); // 200,000 bytes
    agentAsks(ctx, taskId, r1);
    send(ctx, 'b'.repeat(200_001));
    const t2 = envelope(ctx, taskId, 2).e;
    expect(t2.thread.map((t) => [t.turn, t.role, t.text.length, t.omitted_bytes])).toEqual([[1, 'user', 200_000, undefined], [1, 'agent', 100_000, undefined]]);
    expect(t2.thread_omitted).toBeUndefined();

    agentAsks(ctx, taskId, 'c'.repeat(200_000));
    send(ctx, 'd'.repeat(200_000));
    const t3 = envelope(ctx, taskId, 3);
    // 524,288 - 400,001 = 124,287 bytes of room: r1 is cut to 124,286 (an é is 2 bytes), 75,714 left out.
    expect(t3.e.thread.map((t) => [t.turn, t.role, Buffer.byteLength(t.text), t.omitted_bytes])).toEqual([
      [1, 'agent', 124_286, 75_714],
      [2, 'user', 200_001, undefined],
      [2, 'agent', 200_000, undefined],
    ]);
    expect(t3.e.thread[0]!.text).toBe('é'.repeat(62_143));
    expect(t3.e.thread_omitted).toBe(1);

    let last = t3.bytes;
    for (let turn = 4; turn <= 8; turn++) {
      agentAsks(ctx, taskId, 'e'.repeat(200_000));
      send(ctx, 'f'.repeat(200_000));
      const t = envelope(ctx, taskId, turn);
      expect(t.e.thread_omitted).toBe(2 * (turn - 1) - 3);
      expect(t.e.thread.reduce((s, x) => s + Buffer.byteLength(x.text), 0)).toBe(THREAD_MAX_BYTES);
      expect(t.bytes).toBeLessThan(200_000 + THREAD_MAX_BYTES + 4096);
      expect(Math.abs(t.bytes - last)).toBeLessThan(64);
      last = t.bytes;
    }
  });
});
