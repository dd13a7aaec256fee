import { createHash } from 'node:crypto';
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

  it('forgets a held message (never tried) before a deferred one when full', () => {
    const d = new Deferrals();
    for (let i = 0; i < DEFER_MAX_KEPT - 1; i++) d.deferred(`m${i}`, 0, `t${i}`);
    d.held('h', 0, 10 * DEFER_MAX_WAIT_MS); // due last of all, yet forgotten first
    d.deferred('new', 0, 'tn');
    expect(d.size).toBe(DEFER_MAX_KEPT);
    expect(d.dueAt('h')).toBeNull();
    expect(d.dueAt('m0')).toBe(DEFER_FIRST_WAIT_MS);
  });
});

/** A seeded generator (mulberry32), so the sequence below is the same on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Recorded from the scan over every remembered message that chose what to forget before the heap (seed 20261203, 30,000 steps). */
const FORGOTTEN_COUNT = 6451;
const FORGOTTEN_SHA256 = 'dc433a57b46a0038e027267a0dde9ab8f6eb9202c01ab97c7a764094ebfba9f6';

/**
 * Runs a seeded mix of deferrals, holds, verdicts and forgetGone over 2,500 sources against one
 * {@link Deferrals} (times coarse, so many are due at the same ms), and returns the sources it
 * forgot past {@link DEFER_MAX_KEPT}, in order, and the comparisons it made choosing them.
 */
function forgottenInOrder(seed: number, ops: number): { forgotten: string[]; steps: number } {
  const d = new Deferrals();
  const rnd = seeded(seed);
  const kept = new Set<string>();
  const forgotten: string[] = [];
  let now = 0;
  for (let i = 0; i < ops; i++) {
    now += [0, 0, 1000, DEFER_FIRST_WAIT_MS][Math.floor(rnd() * 4)]!;
    const source = `m${Math.floor(rnd() * 2500)}`;
    const r = rnd();
    if (r < 0.04) {
      d.done(source);
      kept.delete(source);
      continue;
    }
    if (r < 0.05) {
      const listed = new Set([...kept].filter(() => rnd() < 0.97));
      d.forgetGone(now, listed);
      for (const s of kept) if (d.dueAt(s) === null) kept.delete(s); // not listed, or older than a deferral lasts
      continue;
    }
    const expected = kept.size + (kept.has(source) ? 0 : 1);
    if (r < 0.45) d.held(source, now, now + [1, 2, 3][Math.floor(rnd() * 3)]! * DEFER_FIRST_WAIT_MS);
    else d.deferred(source, now, `t${Math.floor(rnd() * 50)}`);
    kept.add(source);
    if (d.size < expected) {
      const gone = [...kept].filter((s) => d.dueAt(s) === null);
      expect(gone).toHaveLength(1);
      forgotten.push(gone[0]!);
      kept.delete(gone[0]!);
    }
    expect(d.size).toBe(kept.size);
  }
  return { forgotten, steps: d.steps };
}

describe('forgetting past the bound: which message, and at what cost', () => {
  it('forgets a held message due soonest, else a deferred one due soonest; of those due at once, the one remembered (or changed) first', () => {
    const d = new Deferrals();
    const F = DEFER_FIRST_WAIT_MS;
    d.held('h9', 0, 9 * F); // held first, due last of the held
    d.held('h1', 0, 5 * F);
    d.held('h2', 0, 5 * F);
    d.held('h3', 0, 5 * F);
    d.held('h1', 0, 5 * F); // held again, the same wait: now changed after h3
    d.deferred('x', 0);
    d.deferred('y', 0); // due with x, changed after it
    for (let i = 0; d.size < DEFER_MAX_KEPT; i++) d.deferred(`m${i}`, 1);
    const gone: string[] = [];
    for (let i = 0; i < 7; i++) {
      d.deferred(`n${i}`, 2);
      gone.push(...['h9', 'h1', 'h2', 'h3', 'x', 'y', 'm0'].filter((s) => d.dueAt(s) === null && !gone.includes(s)));
    }
    expect(gone).toEqual(['h2', 'h3', 'h1', 'h9', 'x', 'y', 'm0']);
  });

  it('forgets the same messages, in the same order, as the scan it replaced (digest of that scan\'s choices)', () => {
    // The digest and count were recorded from the scan over every remembered message (the code
    // before the heap); a change in which message goes, or in the order of ties, changes them.
    const { forgotten, steps } = forgottenInOrder(20261203, 30_000);
    expect(forgotten.length).toBe(FORGOTTEN_COUNT);
    expect(createHash('sha256').update(forgotten.join(',')).digest('hex')).toBe(FORGOTTEN_SHA256);
    // Each message is remembered once a step at most and forgotten once for each time remembered:
    // at most one comparison a level in, two a level out (the scan: 1,000 each forgotten, 6,451,000).
    expect(steps).toBeLessThanOrEqual(30_000 * 3 * Math.ceil(Math.log2(DEFER_MAX_KEPT + 1)));
  });

  it(`does O(log n) comparisons per message forgotten, not one per message kept (${DEFER_MAX_KEPT})`, () => {
    const d = new Deferrals();
    for (let i = 0; i < DEFER_MAX_KEPT; i++) d.deferred(`m${i}`, i % 7);
    let most = 0;
    for (let i = 0; i < DEFER_MAX_KEPT; i++) {
      const before = d.steps;
      if (i % 2) d.held(`h${i}`, i, i + DEFER_MAX_WAIT_MS);
      else d.deferred(`n${i}`, i % 5);
      most = Math.max(most, d.steps - before);
      expect(d.size).toBe(DEFER_MAX_KEPT);
    }
    // A binary heap: at most 2 comparisons a level to take the soonest out and 1 a level to put
    // the new one in, ~10 levels for 1,000; the scan compared every one kept (1,000 a message).
    const levels = Math.ceil(Math.log2(DEFER_MAX_KEPT + 1));
    expect(most).toBeLessThanOrEqual(4 * levels);
  });
});

describe('held messages (signed only under a selector whose lookup failed in the check)', () => {
  it('wait until the deferral that held them is due, are no try, and name a task only when deferred before', () => {
    const d = new Deferrals();
    d.held('h', 0, 5 * DEFER_FIRST_WAIT_MS);
    expect([d.waits('h', 5 * DEFER_FIRST_WAIT_MS - 1), d.waits('h', 5 * DEFER_FIRST_WAIT_MS)]).toEqual([true, false]);
    expect(d.tasks).toBe(0);
    expect(d.deferred('h', 5 * DEFER_FIRST_WAIT_MS, 'task-1')).toBe(1); // the first try: its backoff starts at 1 min
    expect(d.dueAt('h')).toBe(6 * DEFER_FIRST_WAIT_MS);
    expect(d.taskWaitsSince('task-1')).toBe(0); // since it was first held
    d.held('h', 6 * DEFER_FIRST_WAIT_MS, 7 * DEFER_FIRST_WAIT_MS);
    expect(d.taskWaitsSince('task-1')).toBe(0); // the task and the backoff kept
    expect(d.deferred('h', 7 * DEFER_FIRST_WAIT_MS)).toBe(2);
    expect(d.dueAt('h')).toBe(9 * DEFER_FIRST_WAIT_MS);
    expect(d.taskWaitsSince('task-1')).toBe(0);
  });
});

describe('the index by task (taskWaitsSince without a scan)', () => {
  it('answers the earliest first deferral of a task\'s messages through deferrals, re-deferrals, done and forgetGone', () => {
    const d = new Deferrals();
    d.deferred('a1', 100, 'A');
    d.deferred('a2', 50, 'A');
    d.deferred('a3', 200, 'A');
    d.deferred('b1', 300, 'B');
    d.deferred('x', 10); // no task
    expect([d.taskWaitsSince('A'), d.taskWaitsSince('B'), d.taskWaitsSince('C'), d.tasks]).toEqual([50, 300, null, 2]);
    d.deferred('a2', 400, 'A'); // tried again: its first deferral stands
    expect(d.taskWaitsSince('A')).toBe(50);
    d.done('a2');
    expect(d.taskWaitsSince('A')).toBe(100);
    d.done('a1');
    expect(d.taskWaitsSince('A')).toBe(200);
    d.done('b1');
    expect([d.taskWaitsSince('B'), d.tasks]).toEqual([null, 1]);
    d.done('never-deferred');
    d.deferred('a4', 20, 'A');
    expect(d.taskWaitsSince('A')).toBe(20);
    // A check that listed the whole mailbox and did not see a4: it is gone.
    d.forgetGone(500, new Set(['a3', 'x']));
    expect([d.taskWaitsSince('A'), d.size]).toEqual([200, 2]);
    d.forgetGone(500, new Set(['x']));
    expect([d.taskWaitsSince('A'), d.tasks, d.size]).toEqual([null, 0, 1]);
  });

  it('forgets a task\'s messages once older than a deferral lasts (24 h from arrival, and one backoff)', () => {
    const d = new Deferrals();
    d.deferred('old', 0, 'A');
    d.deferred('young', DEFER_MAX_WAIT_MS, 'A');
    const maxAge = TEMPORARY_RETRY_MS + DEFER_MAX_WAIT_MS;
    d.forgetGone(maxAge);
    expect(d.taskWaitsSince('A')).toBe(0);
    d.forgetGone(maxAge + 1);
    expect([d.taskWaitsSince('A'), d.size]).toEqual([DEFER_MAX_WAIT_MS, 1]);
    d.forgetGone(maxAge + DEFER_MAX_WAIT_MS + 1);
    expect([d.taskWaitsSince('A'), d.size, d.tasks]).toEqual([null, 0, 0]);
  });

  it(`drops a message forgotten past ${DEFER_MAX_KEPT} from its task`, () => {
    const d = new Deferrals();
    for (let i = 0; i < DEFER_MAX_KEPT; i++) d.deferred(`m${i}`, i, i === 0 ? 'first' : 'rest');
    expect([d.taskWaitsSince('first'), d.taskWaitsSince('rest')]).toEqual([0, 1]);
    d.deferred('more', DEFER_MAX_KEPT, 'rest'); // m0 is due soonest: forgotten
    expect([d.taskWaitsSince('first'), d.taskWaitsSince('rest'), d.tasks]).toEqual([null, 1, 1]);
  });
});
