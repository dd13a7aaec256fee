import { describe, expect, it } from 'vitest';
import { maxOf, minOf } from '../../src/extremes.js';

describe('maxOf and minOf', () => {
  it('take 200,000 values (Math.max(...values) throws RangeError beyond about 125,000), as an IMAP SEARCH may answer', () => {
    const uids = Array.from({ length: 200_000 }, (_, i) => (i * 7919) % 200_003);
    expect(maxOf(uids, 0)).toBe(uids.reduce((a, b) => (b > a ? b : a)));
    expect(minOf(uids, 0)).toBe(0);
    expect(maxOf(new Set(uids), 0)).toBe(maxOf(uids, 0));
  });

  it('give ifEmpty for no values (or only NaN), and skip NaN', () => {
    expect([maxOf([], -1), minOf([], 7), maxOf([Number.NaN], 3)]).toEqual([-1, 7, 3]);
    expect([maxOf([1, Number.NaN, 5], 0), minOf([4, Number.NaN, 2], 0)]).toEqual([5, 2]);
    expect([maxOf([-3, -8], 0), minOf([Number.NEGATIVE_INFINITY, 1], 0)]).toEqual([-3, Number.NEGATIVE_INFINITY]);
  });
});
