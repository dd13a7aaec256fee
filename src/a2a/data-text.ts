import { A2AError } from './errors.js';

/**
 * The text a caller's `data` part contributes to the agent's ask: its JSON indented by two spaces
 * (`JSON.stringify(data, null, 2)`), bounded in depth and size. The indented size is counted from
 * the parsed value before any text is built, so a part refused for its size — or for the total of
 * the message — costs a walk of what was sent, never the indented text: 30 KB of dense nested
 * arrays indent to 977 KB, and 557 such parts made 17 s of pretty-printing before the total refused
 * them (attack review, 2026-12-02).
 */

/** Nesting depth a `data` part may have. */
export const MAX_DATA_DEPTH = 32;

/**
 * What the walks below did since a test zeroed it: `visited`, the values counted (each element,
 * key or not, at most once); `maxFrames`, the most containers a walk's stack held at once. A seam
 * for tests: a walk is one pass over what it reads, with a stack as deep as the value, never as
 * wide (a 1 MB flat array of 524K zeros pushed a tuple per element: 1 s and 85 MB before it was
 * refused, attack review 2, 2026-12-02).
 */
export const walkCounts = { visited: 0, maxFrames: 0 };

/** One open container of a walk: its members (an array, or an object's own keys), the next one's index, and its nesting level. */
interface Frame {
  readonly v: unknown[] | Record<string, unknown>;
  readonly keys: string[] | null;
  readonly n: number;
  readonly level: number;
  i: number;
}

function open(v: object, level: number, stack: Frame[]): Frame {
  const keys = Array.isArray(v) ? null : Object.keys(v);
  const f: Frame = { v: v as Frame['v'], keys, n: keys ? keys.length : (v as unknown[]).length, level, i: 0 };
  if (stack.push(f) > walkCounts.maxFrames) walkCounts.maxFrames = stack.length;
  return f;
}

/** The next member of the innermost open container (its key counted into `key` when `onKey` is given), popping the finished ones; undefined `frame` when the walk is done. */
function nextMember(stack: Frame[], onKey?: (k: string) => void): { frame: Frame; member: unknown } | undefined {
  for (let top = stack.at(-1); top; top = stack.at(-1)) {
    if (top.i < top.n) {
      walkCounts.visited++;
      if (!top.keys) return { frame: top, member: (top.v as unknown[])[top.i++] };
      const k = top.keys[top.i++]!;
      onKey?.(k);
      return { frame: top, member: (top.v as Record<string, unknown>)[k] };
    }
    stack.pop();
  }
  return undefined;
}

/** Depth of a parsed JSON value (0 for a scalar), walked without recursion (a hostile body may nest thousands deep); stops past `limit`. */
function depthOf(value: unknown, limit: number): number {
  if (typeof value !== 'object' || value === null) return 0;
  const stack: Frame[] = [];
  open(value, 1, stack);
  let max = 1;
  for (let next = nextMember(stack); next; next = nextMember(stack)) {
    const { member, frame } = next;
    if (typeof member !== 'object' || member === null) continue;
    open(member, frame.level + 1, stack);
    max = Math.max(max, frame.level + 1);
    if (max > limit) return max;
  }
  return max;
}

/** Bytes of a JSON scalar made by `JSON.parse` as JSON text (an overflowing number such as 1e400 parses to Infinity, written `null`). */
function scalarBytes(v: unknown): number {
  if (typeof v === 'string') return Buffer.byteLength(JSON.stringify(v));
  if (typeof v === 'number') return Number.isFinite(v) ? String(v).length : 4;
  return String(JSON.stringify(v)).length;
}

/**
 * The UTF-8 byte length of `JSON.stringify(value, null, 2)` for a value made by `JSON.parse`
 * (null, booleans, finite numbers, strings, arrays, plain objects), counted without building it
 * and without recursion. Each string and number is serialised once on its own (what the
 * indented text holds of it), so the walk costs about what the value's compact form does; the
 * limit is checked as each member is counted, and the stack holds one frame per open container.
 *
 * @param limit bytes; the count stops as soon as it passes them
 * @returns the byte length, or a number above `limit` when it passes
 */
export function indentedJsonBytes(value: unknown, limit: number): number {
  let total = 0;
  const stack: Frame[] = [];
  const onKey = (k: string): void => {
    total += Buffer.byteLength(JSON.stringify(k)) + 2; // the key and ": "
  };
  // Each value at its nesting level (0 at the top): its own indentation is 2 × level.
  for (let v = value, level = 0; ; ) {
    if (typeof v !== 'object' || v === null) total += scalarBytes(v);
    else {
      const f = open(v, level, stack);
      // "[\n" or "{\n", each member on its own line indented 2 × (level + 1), ",\n" between
      // them, then "\n", the container's indentation, and "]" or "}"; an empty one is "[]" or "{}".
      total += f.n === 0 ? 2 : 2 + f.n * 2 * (level + 1) + 2 * (f.n - 1) + 1 + 2 * level + 1;
    }
    if (total > limit) return total;
    const next = nextMember(stack, onKey);
    if (!next) return total;
    v = next.member;
    level = next.frame.level + 1;
  }
}

/**
 * A data part's text, built only when it fits.
 * @param i the part's index, for the message
 * @param maxPartBytes the cap of one part's text (bytes)
 * @param room the bytes left of the message's total; a part past them throws `overTotal()`
 * @throws A2AError invalidParams: nested deeper than {@link MAX_DATA_DEPTH}, larger than
 *   `maxPartBytes` as text, or the error `overTotal` makes
 */
export function dataText(data: unknown, i: number, maxPartBytes: number, room: number, overTotal: () => A2AError): string {
  if (depthOf(data, MAX_DATA_DEPTH) > MAX_DATA_DEPTH) {
    throw new A2AError('invalidParams', `message.parts[${i}].data nests deeper than ${MAX_DATA_DEPTH} levels`);
  }
  const bytes = indentedJsonBytes(data, maxPartBytes);
  if (bytes > maxPartBytes) throw new A2AError('invalidParams', `message.parts[${i}].data is larger than ${maxPartBytes} bytes as text`);
  if (bytes > room) throw overTotal();
  return JSON.stringify(data, null, 2);
}
