/**
 * What start-up leaves behind in V8's heap, returned to the system once `serve` has started.
 *
 * Start-up allocates in bursts (the bundle's code, the config, the store's schema check, the first
 * mailbox check), so V8 grows its young generation from 1 to about 3.5 MiB and keeps the pages it
 * freed in its pool. A daemon that then waits for its callers would hold them for nothing: V8
 * shrinks them only under memory pressure. One collection of the kind V8 runs under that pressure
 * (a major collection with the "last resort" flavour: it also shrinks the young generation and
 * releases pooled pages), once, gives back about 3 MiB (bench/machine-limit.ts, "RSS after
 * start"); the young generation grows again when load comes. See docs/architecture.md, "Start-up
 * and memory".
 */

/** What {@link releaseStartMemory} did. Sizes in bytes. */
export interface StartMemoryRelease {
  /** VmRSS before and after (`process.memoryUsage.rss()`). */
  rssBefore: number;
  rssAfter: number;
  /** The young generation's committed pages before and after (`v8.getHeapSpaceStatistics()`, `new_space`). */
  youngBefore: number;
  youngAfter: number;
  /** Time the collection took, ms. */
  tookMs: number;
}

type Gc = (o: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/**
 * Runs one memory-reducing collection, synchronously (about 10 ms on a 10 MiB heap). V8 gives
 * script a `gc` function only in a context made while `--expose-gc` is set: the flag is set for
 * the making of one new context and unset again, so the bridge's own context never has `gc`.
 * The `flavor: 'last-resort'` option is V8's (Node ≥ 22).
 */
export function releaseStartMemory(): StartMemoryRelease {
  const v8 = process.getBuiltinModule('node:v8');
  const young = (): number => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.physical_space_size ?? 0;
  const rssBefore = process.memoryUsage.rss();
  const youngBefore = young();
  const started = process.hrtime.bigint();
  v8.setFlagsFromString('--expose-gc');
  let gc: Gc;
  try {
    gc = process.getBuiltinModule('node:vm').runInNewContext('gc') as Gc;
  } finally {
    v8.setFlagsFromString('--no-expose-gc');
  }
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  const tookMs = Number(process.hrtime.bigint() - started) / 1e6;
  return { rssBefore, rssAfter: process.memoryUsage.rss(), youngBefore, youngAfter: young(), tookMs };
}
