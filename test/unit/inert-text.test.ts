import { describe, expect, it } from 'vitest';
import { inertReason, inertText } from '../../src/inert-text.js';

/**
 * src/inert-text.ts: what mail put into a verdict reason cannot pass for the bridge's own spacing
 * or table lines in `show` and `ledger` (attack reviews 6 and 7).
 */
describe('inertText', () => {
  it('escapes every space but U+0020, every format character, the braille blank and box drawing; keeps the rest', () => {
    expect(inertText('a\u00a0b\u3000c\u200bd\u202ee')).toBe('a\\u{a0}b\\u{3000}c\\u{200b}d\\u{202e}e');
    // U+2800 draws as a space in most fonts, and no category above holds it; box lines draw as a table's.
    expect(inertText('mail\u2800#2\u2502applied\u2500\u257f')).toBe('mail\\u{2800}#2\\u{2502}applied\\u{2500}\\u{257f}');
    expect(inertText('from mx.example (192.0.2.1) über ✓')).toBe('from mx.example (192.0.2.1) über ✓');
    expect(inertText(inertText('a\u2800b'))).toBe('a\\u{2800}b');
  });

  it('gives back the same outcome when its reason holds nothing to escape', () => {
    const o = { verdict: 'auth:no-border', reason: 'no border hop' };
    expect(inertReason(o)).toBe(o);
    expect(inertReason({ ...o, reason: 'x\u2800y' }).reason).toBe('x\\u{2800}y');
  });
});
