/**
 * The view cache (src/core/view-cache.ts): a value is kept while the store's generation stays
 * the same, a value whose text counts time for at most TIMED_VIEW_MAX_AGE_MS of the bridge clock
 * (and never when the clock went back), and at most `max` entries and `maxWeight` of weight, least
 * recently used out first; a value heavier than a quarter of `maxWeight` goes to one of the heavy
 * slots (at most `heavySlots`, each at most `heavyMaxWeight`), under the same validity.
 */
import { describe, expect, it } from 'vitest';
import { TIMED_VIEW_MAX_AGE_MS, ViewCache } from '../../../src/core/view-cache.js';

describe('ViewCache', () => {
  it('keeps a value while the generation stays, and forgets every value when it moves', () => {
    const c = new ViewCache<string>();
    expect(c.get('a', 7, 0)).toBeUndefined();
    c.set('a', 7, 'view a', null);
    c.set('b', 7, 'view b', null);
    expect(c.get('a', 7, 10_000_000)).toBe('view a');
    expect(c.get('b', 8, 0)).toBeUndefined();
    expect(c.get('a', 8, 0)).toBeUndefined();
    expect(c.size).toBe(0);
  });

  it('a new generation at the same untimed generation drops the timed values only; a new untimed generation drops every value', () => {
    const c = new ViewCache<string>();
    c.set('done', 7, 'completed view', null, 3);
    c.set('w', 7, 'working view', 5000, 3);
    // A mailbox check's record: generation 8, untimed generation still 3.
    expect(c.get('done', 8, 5000, 3)).toBe('completed view');
    expect(c.get('w', 8, 5000, 3)).toBeUndefined();
    expect(c.size).toBe(1);
    // Any other commit.
    expect(c.get('done', 9, 5000, 4)).toBeUndefined();
    expect(c.size).toBe(0);
  });

  it('drops a value read at an older generation than the last seen (a commit between read and keep)', () => {
    const c = new ViewCache<string>();
    expect(c.get('a', 3, 0)).toBeUndefined();
    c.set('a', 2, 'stale', null);
    expect(c.get('a', 3, 0)).toBeUndefined();
  });

  it('keeps a timed value for less than its maximum age on the bridge clock, never across a clock going back', () => {
    const c = new ViewCache<string>();
    c.set('w', 1, 'working', 5000);
    expect(c.get('w', 1, 5000 + TIMED_VIEW_MAX_AGE_MS - 1)).toBe('working');
    expect(c.get('w', 1, 5000 + TIMED_VIEW_MAX_AGE_MS)).toBeUndefined();
    c.set('w', 1, 'working', 5000);
    expect(c.get('w', 1, 4999)).toBeUndefined();
  });

  it('holds at most max entries, the least recently used out first', () => {
    const c = new ViewCache<number>(3);
    for (const k of ['a', 'b', 'c']) c.set(k, 1, k.charCodeAt(0), null);
    expect(c.get('a', 1, 0)).toBe(97);
    c.set('d', 1, 100, null);
    expect(c.size).toBe(3);
    expect(c.get('b', 1, 0)).toBeUndefined();
    expect([c.get('a', 1, 0), c.get('c', 1, 0), c.get('d', 1, 0)]).toEqual([97, 99, 100]);
  });

  it('holds at most maxWeight, the least recently used out first, and (no heavy slot) no value heavier than a quarter of it', () => {
    const c = new ViewCache<string>(100, (v) => v.length, 40, 0);
    for (const k of ['a', 'b', 'c', 'd']) c.set(k, 1, k.repeat(10), null);
    expect([c.size, c.weight]).toEqual([4, 40]);
    expect(c.get('a', 1, 0)).toBe('a'.repeat(10));
    c.set('e', 1, 'e'.repeat(10), null);
    expect([c.size, c.weight]).toEqual([4, 40]);
    expect(c.get('b', 1, 0)).toBeUndefined();

    c.set('big', 1, 'x'.repeat(11), null);
    expect(c.get('big', 1, 0)).toBeUndefined();
    expect([c.size, c.weight]).toEqual([4, 40]);
    // A heavy value under a kept key: the old one goes, the new one is not kept.
    c.set('a', 1, 'x'.repeat(11), null);
    expect(c.get('a', 1, 0)).toBeUndefined();
    expect([c.size, c.weight]).toEqual([3, 30]);

    c.set('f', 2, 'f', null);
    expect([c.size, c.weight]).toEqual([1, 1]);
    c.clear();
    expect(c.weight).toBe(0);
  });

  it('keeps a value heavier than a quarter of maxWeight in a heavy slot: at most heavySlots of them, none over heavyMaxWeight, under the same validity', () => {
    const c = new ViewCache<string>(100, (v) => v.length, 40, 2, 100);
    c.set('small', 1, 's'.repeat(10), null);
    c.set('big1', 1, '1'.repeat(50), null);
    c.set('big2', 1, '2'.repeat(60), 5000);
    expect([c.size, c.heavy, c.weight]).toEqual([3, 2, 10]);
    expect(c.get('big1', 1, 0)).toBe('1'.repeat(50));
    expect(c.get('big2', 1, 5000)).toBe('2'.repeat(60));
    // Least recently used out: big1 was read before big2.
    c.set('big3', 1, '3'.repeat(70), null);
    expect(c.get('big1', 1, 0)).toBeUndefined();
    expect(c.heavy).toBe(2);
    // Heavier than heavyMaxWeight: not kept; a timed one is dropped at its age; a new generation empties the slots.
    c.set('huge', 1, 'h'.repeat(101), null);
    expect(c.get('huge', 1, 0)).toBeUndefined();
    expect(c.get('big2', 1, 5000 + TIMED_VIEW_MAX_AGE_MS)).toBeUndefined();
    expect(c.get('big3', 1, 0)).toBe('3'.repeat(70));
    expect(c.get('big3', 2, 0)).toBeUndefined();
    expect([c.size, c.heavy]).toEqual([0, 0]);
  });

  it('forgets every value on clear (a task change announced)', () => {
    const c = new ViewCache<string>();
    c.set('a', 1, 'x', null);
    c.clear();
    expect(c.get('a', 1, 0)).toBeUndefined();
  });
});
