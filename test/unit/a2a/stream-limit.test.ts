import { describe, expect, it } from 'vitest';
import { A2AError } from '../../../src/a2a/errors.js';
import { StreamLimiter } from '../../../src/a2a/stream-limit.js';

describe('StreamLimiter (server.max_streams_per_caller)', () => {
  it('counts streams per caller, refuses one over the cap with limitReached naming the key, and frees a slot once per release', () => {
    const limiter = new StreamLimiter(2);
    const a1 = limiter.open('caller-a');
    const a2 = limiter.open('caller-a');
    const b1 = limiter.open('caller-b');
    expect(limiter.size).toBe(3);
    let refused: unknown;
    try {
      limiter.open('caller-a');
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(A2AError);
    expect((refused as A2AError).kind).toBe('limitReached');
    expect((refused as Error).message).toMatch(/server\.max_streams_per_caller = 2/);

    a1();
    a1(); // a second call of one release frees nothing more
    expect(limiter.size).toBe(2);
    const a3 = limiter.open('caller-a');
    expect(() => limiter.open('caller-a')).toThrow(A2AError);
    a2();
    a3();
    b1();
    expect(limiter.size).toBe(0);
  });
});
