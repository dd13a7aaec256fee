import { afterEach, describe, expect, it, vi } from 'vitest';
import { indentedJsonBytes, walkCounts } from '../../../src/a2a/data-text.js';
import { parseSendParams } from '../../../src/a2a/params.js';

const msg = (parts: unknown[]) => ({ message: { role: 'ROLE_USER', parts, messageId: 'm' } });

/** A chain of `depth` nested arrays around 0: 2 × depth + 1 bytes compact, about 16 times that indented at depth 30. */
function chain(depth: number): unknown {
  let v: unknown = 0;
  for (let d = 0; d < depth; d++) v = [v];
  return v;
}

/** Counts the indented renderings (`JSON.stringify(x, null, 2)`) the code under test makes. */
function countRenders(): { count: () => number } {
  const real = JSON.stringify;
  let n = 0;
  vi.spyOn(JSON, 'stringify').mockImplementation(((v: unknown, r?: unknown, space?: unknown) => {
    if (space === 2) n++;
    return real(v, r as never, space as never);
  }) as typeof JSON.stringify);
  return { count: () => n };
}

afterEach(() => vi.restoreAllMocks());

describe('indentedJsonBytes', () => {
  it('counts the bytes of JSON.stringify(value, null, 2) without building it', () => {
    const values: unknown[] = [
      null, true, 0, -0, 1e21, -1.5e-7, '', 'é€𝄞 "\\\n\u0001', [], {}, [[]], { a: {} },
      { 'k"é': [1, 'x', null, { y: [false, {}] }], __proto__x: 2 },
      JSON.parse('{"__proto__": {"a": [1, 2]}, "b": "\\ud83d\\ude00"}'),
      chain(30), [chain(3), chain(5), { z: chain(2) }],
    ];
    for (const v of values) expect(indentedJsonBytes(v, Infinity), JSON.stringify(v)).toBe(Buffer.byteLength(JSON.stringify(v, null, 2)));
  });

  it('stops once it passes the limit', () => {
    const v = Array.from({ length: 1000 }, () => chain(30));
    const whole = Buffer.byteLength(JSON.stringify(v, null, 2));
    const n = indentedJsonBytes(v, 10_000);
    expect(n).toBeGreaterThan(10_000);
    expect(n).toBeLessThan(whole);
  });
});

describe('the walks of a data part: one pass, a stack as deep as the value', () => {
  const reset = () => Object.assign(walkCounts, { visited: 0, maxFrames: 0 });

  it('hold one frame per open container, never one per element', () => {
    // 50,000 zeros (250 KB indented) and the same within 3 arrays and an object (650 KB), under the 1 MiB cap.
    const flat = JSON.parse(`[${'0,'.repeat(49_999)}0]`) as unknown;
    for (const [data, frames] of [[flat, 1], [[[{ a: [flat] }]], 5]] as const) {
      reset();
      parseSendParams(msg([{ data }]), ['ROLE_USER']);
      expect(walkCounts.maxFrames).toBe(frames);
    }
  });

  it('stop counting members once the size passes the limit', () => {
    const wide = Array.from({ length: 100_000 }, () => 'x'.repeat(100));
    reset();
    expect(indentedJsonBytes(wide, 10_000)).toBeGreaterThan(10_000);
    // about 10,000 / 108 members counted, not the 100,000 the array holds
    expect(walkCounts.visited).toBeLessThan(100);
    const obj = Object.fromEntries(wide.map((v, i) => [`k${i}`, v]));
    reset();
    expect(indentedJsonBytes(obj, 10_000)).toBeGreaterThan(10_000);
    expect(walkCounts.visited).toBeLessThan(100);
  });
});

describe('data parts: a refused message costs no more text than the cap', () => {
  // The attack's shape: parts of ~30 KB compact that indent to just under the 1 MiB part cap, 34 of them.
  const one = Array.from({ length: 478 }, () => chain(30));
  const partBytes = Buffer.byteLength(JSON.stringify(one, null, 2));

  it('stops at the first part that passes the 2 MiB total: later parts are never indented', () => {
    expect(partBytes).toBeGreaterThan(900_000);
    expect(partBytes).toBeLessThan(1024 * 1024);
    const renders = countRenders();
    expect(() => parseSendParams(msg(Array.from({ length: 34 }, () => ({ data: one }))), ['ROLE_USER'])).toThrow(/more than 2097152 bytes of text/);
    expect(renders.count()).toBe(2);
    expect(() => parseSendParams(msg(Array.from({ length: 34 }, () => ({ data: one }))), ['ROLE_USER'])).toThrow(/\(message\.parts\[2\] passes it\)/);
  });

  it('refuses a part over 1 MiB indented without indenting it', () => {
    const big = Array.from({ length: 1200 }, () => chain(30));
    const renders = countRenders();
    expect(() => parseSendParams(msg([{ data: big }]), ['ROLE_USER'])).toThrow(/message\.parts\[0\]\.data is larger than 1048576 bytes as text/);
    expect(renders.count()).toBe(0);
  });

  it('counts text parts and separators in the same total', () => {
    const text = 'x'.repeat(2 * 1024 * 1024 - partBytes - 1);
    expect(parseSendParams(msg([{ text }, { data: one }]), ['ROLE_USER']).message.text).toHaveLength(2 * 1024 * 1024);
    expect(() => parseSendParams(msg([{ text: `${text}y` }, { data: one }]), ['ROLE_USER'])).toThrow(/message\.parts\[1\] passes it/);
  });
});
