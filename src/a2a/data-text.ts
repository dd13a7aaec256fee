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

/** Depth of a parsed JSON value, walked without recursion (a hostile body may nest thousands deep); stops past `limit`. */
function depthOf(value: unknown, limit: number): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    max = Math.max(max, d);
    if (max > limit) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, d + 1]);
  }
  return max;
}

/**
 * The UTF-8 byte length of `JSON.stringify(value, null, 2)` for a value made by `JSON.parse`
 * (null, booleans, finite numbers, strings, arrays, plain objects), counted without building it
 * and without recursion. Each string and number is serialised once on its own (what the
 * indented text holds of it), so the walk costs about what the value's compact form does.
 *
 * @param limit bytes; the count stops as soon as it passes them
 * @returns the byte length, or a number above `limit` when it passes
 */
export function indentedJsonBytes(value: unknown, limit: number): number {
  let total = 0;
  // Each entry: a value and its nesting level (0 at the top): its own indentation is 2 × level.
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, level] = stack.pop()!;
    if (typeof v !== 'object' || v === null) {
      total += typeof v === 'string' ? Buffer.byteLength(JSON.stringify(v)) : String(JSON.stringify(v)).length;
    } else {
      const keys = Array.isArray(v) ? null : Object.keys(v);
      const n = keys ? keys.length : (v as unknown[]).length;
      if (n === 0) total += 2;
      else {
        // "[\n" or "{\n", each member on its own line indented 2 × (level + 1), ",\n" between
        // them, then "\n", the container's indentation, and "]" or "}"; an object's key and ": ".
        total += 2 + n * 2 * (level + 1) + 2 * (n - 1) + 1 + 2 * level + 1;
        if (keys) {
          for (const k of keys) {
            total += Buffer.byteLength(JSON.stringify(k)) + 2;
            stack.push([(v as Record<string, unknown>)[k], level + 1]);
          }
        } else for (const child of v as unknown[]) stack.push([child, level + 1]);
      }
    }
    if (total > limit) return total;
  }
  return total;
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
