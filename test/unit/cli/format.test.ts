import { describe, expect, it } from 'vitest';
import { clean, cleanLines, elideMiddle, gap, isoJson, isoUtc, jsonForTerminal, printJson, table, truncate } from '../../../src/cli/format.js';

describe('human output', () => {
  it('makes terminal controls and bidi overrides from mail visible and inert', () => {
    expect(clean('Re: \x1b[2J\x1b[31mdone\x07')).toBe('Re: \\u{1b}[2J\\u{1b}[31mdone\\u{7}');
    expect(clean('a\rb\nc')).toBe('a\\u{d}b\\u{a}c');
    expect(clean('\u009b31m')).toBe('\\u{9b}31m');
    expect(clean('invoice\u202egnp.exe')).toBe('invoice\\u{202e}gnp.exe');
    expect(clean('plain text — é ü 日本')).toBe('plain text — é ü 日本');
    expect(cleanLines('one\x1b\ntwo')).toBe('one\\u{1b}\ntwo');
    // Hidden text: tag characters, zero-width characters, separators, default-ignorables.
    expect(clean('ok\u{E0049}\u200Bx\u2028y\u3164')).toBe('ok\\u{e0049}\\u{200b}x\\u{2028}y\\u{3164}');
  });

  it('--json on a terminal escapes C1, DEL, bidi, format and separator characters; the JSON keeps its value', () => {
    const value = { subject: 'Re: \u009b31m \u202Eevil\u202C \u{E0049}\u{E0047} a\u2028b \u007f', plain: 'é 日本 🙂', c0: '\u001b[2J' };
    const text = JSON.stringify(value, null, 2);
    const safe = jsonForTerminal(text);
    expect(JSON.parse(safe)).toEqual(value);
    expect(safe).toContain('Re: \\u009b31m \\u202eevil\\u202c \\udb40\\udc49\\udb40\\udc47 a\\u2028b \\u007f');
    expect(safe).toContain('"plain": "é 日本 🙂"');
    expect(safe).toMatch(/^[^\u007f-\u009f\p{Cf}\u2028\u2029]*$/u);

    const written = (isTTY: boolean): string => {
      let out = '';
      printJson(value, { isTTY, write: (chunk: string | Uint8Array) => ((out += String(chunk)), true) });
      return out;
    };
    expect(written(true)).toBe(`${safe}\n`);
    // Not a terminal (a pipe, a file): byte for byte what JSON.stringify wrote.
    expect(written(false)).toBe(`${text}\n`);
  });

  it('aligns columns, cleans every cell and leaves the last column unpadded', () => {
    const t = table(['ID', 'NAME', 'NOTE'], [['1', 'a', 'x'], ['22', 'bbbb', '\x1b[1m']]);
    expect(t.split('\n')).toEqual(['ID  NAME  NOTE', '1   a     x', '22  bbbb  \\u{1b}[1m']);
  });

  it('aligns 200,000 rows (a Math.max spread over the cells threw RangeError beyond about 125,000)', () => {
    const rows = Array.from({ length: 200_000 }, (_, i) => [String(i), 'x']);
    const lines = table(['N', 'V'], rows).split('\n');
    expect(lines).toHaveLength(200_001);
    expect([lines[0], lines[1], lines[200_000]]).toEqual(['N       V', '0       x', '199999  x']);
  });

  it('elideMiddle keeps the start and the end within max code points, cutting at spaces near the budget', () => {
    expect(elideMiddle('short text', 20)).toBe('short text');
    const words = Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ');
    const cut = elideMiddle(words, 40);
    expect([...cut].length).toBeLessThanOrEqual(40);
    expect(cut).toMatch(/^w0 w1 w2 w3 \S* ?… (\S+ )*w38 w39$/u);
    expect(cut.split(' … ')[0]!.endsWith(' ')).toBe(false);
    // No space near the cut: cut inside the word; astral characters count as one.
    const solid = '🙂'.repeat(50);
    expect(elideMiddle(solid, 21)).toBe(`${'🙂'.repeat(6)} … ${'🙂'.repeat(12)}`);
  });

  it('a cut never splits an escape that clean() wrote: each \\u{…} stays whole or goes whole', () => {
    // What `ledger` printed before: `…6fda468d635f] \u{…` (a Subject cut inside its escape).
    const subject = clean(`Re: [GROK:4e0b8a52-0c39-4d3f-9b1e-6fda468d635f] \x1b[2J\u202e\u{E0049}done`);
    const reason = clean(`gate 4: From is "\x1b[31m${'x'.repeat(30)}\u200b\u202e${'y'.repeat(30)}\x07" <a@evil.example>, not agent@agent.example`);
    const escapes = /\\u\{[0-9a-f]+\}/g;
    const partial = (cut: string): boolean => cut.replace(escapes, '').includes('\\u');
    for (const [text, fn] of [[subject, truncate], [reason, elideMiddle], [subject, elideMiddle], [reason, truncate]] as const) {
      for (let max = 1; max <= [...text].length + 1; max++) {
        const cut = fn(text, max);
        expect([...cut].length, `${fn.name} ${max}: ${cut}`).toBeLessThanOrEqual(Math.max(max, fn === elideMiddle ? 3 : 1));
        expect(partial(cut), `${fn.name} ${max}: ${cut}`).toBe(false);
      }
    }
    // A cut inside the first escape (its 6 characters do not fit) leaves it out whole; one more character keeps it whole.
    const before = 'Re: [GROK:4e0b8a52-0c39-4d3f-9b1e-6fda468d635f] ';
    expect(truncate(subject, 54)).toBe(`${before}…`);
    expect(truncate(subject, 55)).toBe(`${before}\\u{1b}…`);
  });

  it('times are ISO UTC; gaps read as a person would say them', () => {
    expect(isoUtc(Date.parse('2026-05-01T10:00:03.456Z'))).toBe('2026-05-01T10:00:03Z');
    expect(isoUtc(null)).toBe('-');
    expect(isoJson(Date.parse('2026-05-01T10:00:03.456Z'))).toBe('2026-05-01T10:00:03.456Z');
    expect(isoJson(null)).toBeNull();
    expect([850, 4200, 42_000, 185_000, 7_440_000, 2 * 86_400_000 + 3 * 3_600_000, -2000].map(gap)).toEqual([
      '850 ms', '4.2 s', '42 s', '3 min 5 s', '2 h 4 min', '2 d 3 h', '-2.0 s',
    ]);
    expect(truncate('abcdef', 4)).toBe('abc…');
    expect(truncate('abc', 4)).toBe('abc');
  });
});
