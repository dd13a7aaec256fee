/**
 * The header stage's slices are bounded by work, not by bytes alone (docs/architecture.md, "The
 * header stage"): a forged header block of 15 KB of tiny `X:a` fields is 3,000 lines, and 17 of
 * them fit in 256 KiB — one slice held the event loop 133–387 ms. Counted in lines, never in time.
 */
import { describe, expect, it } from 'vitest';
import { screenSlices } from '../../../src/core/mail-check.js';
import { MAX_HEADER_LINES } from '../../../src/uplink/gates.js';

const dense = (): { head: Buffer } => ({ head: Buffer.from(`Subject: x\r\n${'X:a\r\n'.repeat(3000)}\r\n`) });
const lines = (b: Buffer): number => b.toString('latin1').split('\n').length - 1;

describe('screenSlices', () => {
  it('cuts a slice at MAX_HEADER_LINES header lines: one field-dense forgery of 15 KB a slice', () => {
    const slices = screenSlices(Array.from({ length: 40 }, dense));
    expect(slices.flat()).toHaveLength(40);
    for (const s of slices) expect(s.length === 1 || s.reduce((n, m) => n + lines(m.head), 0) <= MAX_HEADER_LINES).toBe(true);
    expect(Math.max(...slices.map((s) => s.length))).toBe(1);
  });

  it('keeps small blocks 50 to a slice, and a block over every bound a slice of its own, in order', () => {
    const small = Array.from({ length: 120 }, (_, i) => ({ head: Buffer.from(`Subject: ${i}\r\nFrom: a@b\r\n\r\n`) }));
    expect(screenSlices(small).map((s) => s.length)).toEqual([50, 50, 20]);
    const big = { head: Buffer.from(`${'X:a\r\n'.repeat(MAX_HEADER_LINES + 1)}\r\n`) };
    const mixed = [small[0]!, big, small[1]!];
    expect(screenSlices(mixed)).toEqual([[small[0]], [big], [small[1]]]);
  });
});
