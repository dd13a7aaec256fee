import { describe, expect, it } from 'vitest';
import { DEFER_FIRST_WAIT_MS, DEFER_MAX_KEPT, DEFER_MAX_WAIT_MS, Deferrals } from '../../../src/core/deferrals.js';
import { TEMPORARY_RETRY_MS } from '../../../src/core/judge.js';

describe('deferred messages (gate 7 temperror): their backoff and its bounds', () => {
  it('waits 1 min, then twice as long each time, at most 1 h: about 30 tries in the 24 h a deferral lasts', () => {
    const d = new Deferrals();
    let now = 0;
    let tries = 0;
    const waits: number[] = [];
    while (now < TEMPORARY_RETRY_MS) {
      tries = d.deferred('m', now, 'task-1');
      let next = now;
      while (d.waits('m', next)) next += 1000;
      waits.push(next - now);
      now = next;
    }
    expect(waits.slice(0, 7)).toEqual([1, 2, 4, 8, 16, 32, 60].map((m) => m * DEFER_FIRST_WAIT_MS));
    expect(Math.max(...waits)).toBe(DEFER_MAX_WAIT_MS);
    expect(tries).toBeLessThanOrEqual(30);
    expect(d.taskWaitsSince('task-1')).toBe(0);
    d.done('m');
    expect(d.size).toBe(0);
    expect(d.taskWaitsSince('task-1')).toBeNull();
  });

  it(`remembers at most ${DEFER_MAX_KEPT} messages, forgetting the one due soonest`, () => {
    const d = new Deferrals();
    for (let i = 0; i <= DEFER_MAX_KEPT; i++) d.deferred(`m${i}`, i);
    expect(d.size).toBe(DEFER_MAX_KEPT);
    expect(d.waits('m0', DEFER_MAX_KEPT)).toBe(false); // forgotten: tried at the next check
    expect(d.waits(`m${DEFER_MAX_KEPT}`, DEFER_MAX_KEPT)).toBe(true);
  });
});
