/**
 * Human output of the CLI: plain aligned text, times in ISO UTC, and every string that came from
 * outside (mail headers, reasons quoting them, callers' text) made inert for a terminal.
 */
import { iso } from '../core/time.js';
import { maxOf } from '../extremes.js';

/**
 * What could drive a terminal, reorder a line or hide text: C0 and C1 controls and DEL (`Cc`),
 * format characters (`Cf`: bidi marks, overrides and isolates, zero-width characters, Unicode tag
 * characters), other default-ignorable characters, and the line and paragraph separators.
 */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\p{Zl}\p{Zp}]/gu;
/** The same without C0 controls, which JSON.stringify escapes already. */
const UNSAFE_IN_JSON = /[\u007f-\u009f\p{Cf}\p{Default_Ignorable_Code_Point}\p{Zl}\p{Zp}]/gu;

/**
 * Replaces each {@link UNSAFE} character with a visible `\u{…}` escape. Mail is hostile input: a
 * Subject may carry an escape sequence that rewrites the screen, or instructions in tag characters.
 */
export function clean(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

/**
 * JSON text for a terminal: each C1 control, DEL, format, default-ignorable or separator character
 * written as a `\uXXXX` escape (a surrogate pair for the tag characters), so the text stays valid
 * JSON with the same value and nothing in it can act on the terminal. Such characters occur in
 * JSON.stringify's output only inside strings, where an escape means the same character.
 */
export function jsonForTerminal(json: string): string {
  return json.replace(UNSAFE_IN_JSON, (c) => [...Array(c.length).keys()].map((i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join(''));
}

/** {@link clean} applied to each line of `text`, keeping the line breaks. */
export function cleanLines(text: string): string {
  return text.split('\n').map(clean).join('\n');
}

/**
 * The pieces a cut may not split: each `\u{…}` escape {@link clean} writes is one, and every other
 * code point one (a cut inside an escape printed `… \u{…` with no hex: neither the character nor text).
 */
const UNIT = /\\u\{[0-9a-f]{1,6}\}|[\s\S]/gu;

/** The units of `text` ({@link UNIT}) and each one's width in code points. */
function units(text: string): { u: string[]; w: number[] } {
  const u = text.match(UNIT) ?? [];
  return { u, w: u.map((x) => (x.length === 1 ? 1 : [...x].length)) };
}

/** How many units from the start (or, with `fromEnd`, from the end) fit in `budget` code points. */
function fitting(w: readonly number[], budget: number, fromEnd = false): number {
  let n = 0;
  for (let used = 0; n < w.length; n++) {
    used += w[fromEnd ? w.length - 1 - n : n]!;
    if (used > budget) break;
  }
  return n;
}

/**
 * `text` cut to at most `max` characters (code points), the last one an ellipsis when cut. An
 * escape {@link clean} wrote (`\u{1b}`) is kept whole or left out whole, never split.
 */
export function truncate(text: string, max: number): string {
  const { u, w } = units(text);
  if (w.reduce((a, b) => a + b, 0) <= max) return text;
  return `${u.slice(0, fitting(w, Math.max(0, max - 1))).join('')}…`;
}

/**
 * `text` cut to at most `max` characters (code points) by leaving out its middle: its first third
 * and the rest of the budget from its end stay, joined by ` … `, each cut moved to a space when one
 * lies within 12 characters of it. For a text whose end says what its start leads up to: a ledger
 * reason names its gate and rule first and ends with what was missing ("gate 7: no trusted
 * dkim=pass … (trusted: …; the message holds no DKIM-Signature with d=…)"), the detail between.
 * An escape {@link clean} wrote is kept whole or left out whole, never split.
 */
export function elideMiddle(text: string, max: number): string {
  const { u, w } = units(text);
  const total = w.reduce((a, b) => a + b, 0);
  if (total <= max) return text;
  const room = Math.max(0, max - 3);
  let head = fitting(w, Math.floor(room / 3));
  const headWidth = w.slice(0, head).reduce((a, b) => a + b, 0);
  let tail = u.length - fitting(w, room - headWidth, true);
  const space = (i: number): boolean => u[i] === ' ';
  for (let i = head; i > Math.max(0, head - 12); i--) {
    if (space(i)) {
      head = i;
      break;
    }
  }
  for (let i = tail; i < Math.min(u.length, tail + 12); i++) {
    if (space(i)) {
      tail = i + 1;
      break;
    }
  }
  return `${u.slice(0, head).join('').trimEnd()} … ${u.slice(tail).join('').trimStart()}`;
}

/** A time as ISO-8601 UTC to the second (`2026-05-01T10:00:03Z`), or `-` for none. */
export function isoUtc(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '-' : iso(ms);
}

/** A time as full ISO-8601 UTC with milliseconds, for JSON output; null stays null. */
export function isoJson(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}

/** A measured gap: `850 ms`, `4.2 s`, `3 min 5 s`, `2 h 4 min`, `3 d 2 h`; negative gaps keep their sign. */
export function gap(ms: number): string {
  const sign = ms < 0 ? '-' : '';
  const a = Math.abs(ms);
  if (a < 1000) return `${sign}${Math.round(a)} ms`;
  if (a < 10_000) return `${sign}${(a / 1000).toFixed(1)} s`;
  const s = Math.round(a / 1000);
  if (s < 60) return `${sign}${s} s`;
  if (s < 3600) return `${sign}${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86_400) return `${sign}${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${sign}${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

/**
 * Rows as aligned columns separated by two spaces, with a header line; every cell is passed
 * through {@link clean}; the last column is not padded. Widths count code points. `maxPad[i]`
 * caps how wide column i is padded: a longer cell runs on in its own row, so the output stays
 * linear in the cells' size however long one cell is.
 */
export function table(header: readonly string[], rows: readonly (readonly string[])[], maxPad: readonly (number | undefined)[] = []): string {
  const cells = [header, ...rows].map((r) => r.map((c) => clean(c)));
  const widths = header.map((_, i) => Math.min(maxOf(cells.map((r) => [...(r[i] ?? '')].length), 0), maxPad[i] ?? Number.POSITIVE_INFINITY));
  return cells
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c + ' '.repeat(Math.max(0, widths[i]! - [...c].length))))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/**
 * Writes `value` as indented JSON and a newline to `out` (stdout): byte for byte as JSON.stringify
 * wrote it when `out` is not a terminal (a pipe, a file), with {@link jsonForTerminal} applied when
 * it is.
 */
export function printJson(value: unknown, out: Pick<NodeJS.WriteStream, 'write' | 'isTTY'> = process.stdout): void {
  const text = JSON.stringify(value, null, 2);
  out.write(`${out.isTTY ? jsonForTerminal(text) : text}\n`);
}
