/**
 * A reply's text as lines, indexed once (src/uplink/reply-format.ts reads the reply block from
 * it): linear in the text, nothing allocated per line.
 */

/**
 * The lines of a text without copying it: line `i` is `text.slice(start(i), end(i))`; line ends are
 * CRLF, LF or a bare CR. Built in one pass; every question below is answered in O(1) per line, so
 * the parse is linear in the text (a 3 MB reply of `____` lines took 60 s when each rule line
 * searched the whole text for the next non-blank line). Each line's start, end and first visible
 * character are found once, in typed arrays, and nothing is allocated per line (joining 5 million
 * short lines one string at a time cost more than the rest of the parse: bench/RESULTS.md,
 * reply-parse).
 */
export class Lines {
  readonly count: number;
  readonly #starts: Int32Array;
  readonly #ends: Int32Array;
  /** Per line, the code unit of its first character that is not white space; -1 for a blank line. */
  readonly #first: Int32Array;

  constructor(readonly text: string) {
    let n = 1;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 10 || (c === 13 && text.charCodeAt(i + 1) !== 10)) n++;
    }
    const starts = new Int32Array(n);
    const ends = new Int32Array(n);
    const first = new Int32Array(n);
    let k = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 10) {
        ends[k++] = i > 0 && text.charCodeAt(i - 1) === 13 ? i - 1 : i;
        starts[k] = i + 1;
      } else if (c === 13 && text.charCodeAt(i + 1) !== 10) {
        ends[k++] = i;
        starts[k] = i + 1;
      }
    }
    ends[n - 1] = text.length;
    for (let i = 0; i < n; i++) {
      let c = -1;
      for (let p = starts[i]!, e = ends[i]!; p < e; p++) {
        const u = text.charCodeAt(p);
        if (!isSpace(u)) {
          c = u;
          break;
        }
      }
      first[i] = c;
    }
    this.count = n;
    this.#starts = starts;
    this.#ends = ends;
    this.#first = first;
  }

  start(i: number): number {
    return this.#starts[i]!;
  }

  /** Where line `i` ends, before its line break. */
  end(i: number): number {
    return this.#ends[i]!;
  }

  length(i: number): number {
    return this.#ends[i]! - this.#starts[i]!;
  }

  at(i: number): string {
    return i < 0 || i >= this.count ? '' : this.text.slice(this.#starts[i], this.#ends[i]);
  }

  /** Only white space (`\s`), or empty. */
  blank(i: number): boolean {
    return this.firstVisible(i) === -1;
  }

  /** The code unit of the first character that is not white space, or -1 for a blank line. */
  firstVisible(i: number): number {
    return this.#first[i]!;
  }

  /** Lines `from` (inclusive) to `to` (exclusive) joined with `\n`: one slice, its line breaks made `\n`. */
  join(from: number, to: number): string {
    if (to <= from) return '';
    const joined = this.text.slice(this.#starts[from], this.#ends[to - 1]);
    return joined.includes('\r') ? joined.replace(/\r\n?/g, '\n') : joined;
  }
}

/** The code units JavaScript's `\s` matches (ECMA-262 WhiteSpace and LineTerminator). */
function isSpace(c: number): boolean {
  return (
    c === 0x20 || (c >= 0x09 && c <= 0x0d) || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
  );
}
