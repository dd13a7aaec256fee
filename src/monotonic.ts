/**
 * Milliseconds on a monotonic clock (since the process started; never steps with the wall clock),
 * for durations, budgets and "at most once per" limits; a fraction, not rounded.
 *
 * `process.uptime()`, not `performance.now()`: the first read of the global `performance` makes
 * Node load perf_hooks (nine of its internal modules) at every start of `serve`
 * (docs/architecture.md, "Start-up and memory"). A read costs about 0.1 µs more.
 */
export function monotonicMs(): number {
  return process.uptime() * 1000;
}
