import { describe, expect, it } from 'vitest';
import { loadOnce, ParserUnavailableError } from '../../../src/uplink/parser-unavailable.js';

/**
 * The loader of the libraries the judge reads mail with (libmime, nodemailer's addressparser):
 * a failed load is a ParserUnavailableError naming the library — never swallowed by a parser's
 * catch-all as bad mail (src/uplink/subject-tag.ts, src/uplink/raw-headers.ts) — and it is tried
 * again on the next use, so a package put back is found without a restart.
 */
describe('loadOnce', () => {
  it('throws ParserUnavailableError naming the library while the load fails; loads once it succeeds, and then never again', () => {
    let fails = true;
    let loads = 0;
    const lib = loadOnce('the test library', () => {
      loads++;
      if (fails) throw new Error("Cannot find module 'x'");
      return { ok: true };
    });
    expect(() => lib()).toThrow(ParserUnavailableError);
    expect(() => lib()).toThrow("the test library could not be loaded: Cannot find module 'x'");
    fails = false;
    expect(lib()).toEqual({ ok: true });
    expect(lib()).toEqual({ ok: true });
    expect(loads).toBe(3);
  });
});
