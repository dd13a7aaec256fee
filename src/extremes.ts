/**
 * The largest and smallest of a list of numbers, by a loop. `Math.max(...values)` passes each
 * value as an argument: V8 throws `RangeError: Maximum call stack size exceeded` beyond about
 * 125,000 of them (a table of 200,000 rows, an IMAP SEARCH answering with 200,000 UIDs).
 */

/** The largest of `values`, or `ifEmpty` when there are none. NaN is skipped. */
export function maxOf(values: Iterable<number>, ifEmpty: number): number {
  let best = Number.NEGATIVE_INFINITY;
  let any = false;
  for (const v of values) {
    if (v > best) best = v;
    any ||= !Number.isNaN(v);
  }
  return any ? best : ifEmpty;
}

/** The smallest of `values`, or `ifEmpty` when there are none. NaN is skipped. */
export function minOf(values: Iterable<number>, ifEmpty: number): number {
  let best = Number.POSITIVE_INFINITY;
  let any = false;
  for (const v of values) {
    if (v < best) best = v;
    any ||= !Number.isNaN(v);
  }
  return any ? best : ifEmpty;
}
