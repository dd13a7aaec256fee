import { describe, expect, it } from 'vitest';
import { StreamLimiter } from '../../../src/a2a/stream-limit.js';

describe('StreamLimiter (server.max_streams_per_caller)', () => {
  it('counts streams per caller; one more at the cap closes that caller\'s oldest (no one else\'s), and each release frees its slot once', () => {
    const limiter = new StreamLimiter(2);
    const closed: string[] = [];
    const open = (key: string, name: string) => limiter.open(key, () => closed.push(name));
    const a1 = open('caller-a', 'a1');
    const a2 = open('caller-a', 'a2');
    const b1 = open('caller-b', 'b1');
    expect(limiter.size).toBe(3);

    const a3 = open('caller-a', 'a3');
    expect(closed).toEqual(['a1']);
    expect(limiter.size).toBe(3);
    expect(limiter.closedAtCap).toBe(1);
    a1(); // the closed stream's own release, when its events end, frees nothing more
    a1();
    expect(limiter.size).toBe(3);

    a2();
    expect(limiter.size).toBe(2);
    open('caller-a', 'a4'); // a free slot: nothing closed
    expect(closed).toEqual(['a1']);
    open('caller-a', 'a5');
    expect(closed).toEqual(['a1', 'a3']);
    a3();
    b1();
    expect(limiter.size).toBe(2);
  });
});
