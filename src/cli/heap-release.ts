/**
 * What bursts of work leave behind in V8's heap, returned to the system when `serve` goes quiet:
 * once it has started, and after each burst of calls once a whole {@link IDLE_CHECK_EVERY_MS}
 * passed without one.
 *
 * Start-up and bursts of calls allocate fast, so V8 grows its young generation (from 256 KiB to
 * 3.5 MiB at start) and keeps the pages it freed in its pool. A daemon that then waits for its
 * callers would hold them for nothing: V8 shrinks them only under memory pressure. One collection
 * of the kind V8 runs under that pressure (a major collection with the "last resort" flavour: it
 * also shrinks the young generation and releases pooled pages) gives back about 3 MiB after start
 * (bench/machine-limit.ts, "RSS after start") and about 4 MiB after the first calls of a task
 * (79 → 75 MiB, docs/architecture.md); the young generation grows again when load comes. See docs/architecture.md, "Start-up and memory".
 */

/** How often `serve` looks whether the calls stopped, ms: a release comes 1–2 of these after the last call. */
export const IDLE_CHECK_EVERY_MS = 60_000;

/** What {@link releaseHeap} did. Sizes in bytes. */
export interface HeapRelease {
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

let gcOfOwnContext: Gc | undefined;

/**
 * V8's `gc` function, which it gives script only in a context made while `--expose-gc` is set.
 * Node started with `--expose-gc` has it on its global: that one is used, and the flag stays set.
 * Else the flag is set for the making of one new context and unset again, so the bridge's own
 * context never has `gc`. Made once, at the first call.
 */
function gcFunction(): Gc {
  if (gcOfOwnContext) return gcOfOwnContext;
  const global = (globalThis as { gc?: unknown }).gc;
  if (typeof global === 'function') return (gcOfOwnContext = global as Gc);
  const v8 = process.getBuiltinModule('node:v8');
  v8.setFlagsFromString('--expose-gc');
  try {
    gcOfOwnContext = process.getBuiltinModule('node:vm').runInNewContext('gc') as Gc;
  } finally {
    v8.setFlagsFromString('--no-expose-gc');
  }
  return gcOfOwnContext;
}

/**
 * Runs one memory-reducing collection, synchronously (about 10–20 ms on the bridge's heap of
 * 10–25 MiB). The `flavor: 'last-resort'` option is V8's (Node ≥ 22).
 */
export function releaseHeap(): HeapRelease {
  const v8 = process.getBuiltinModule('node:v8');
  const young = (): number => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.physical_space_size ?? 0;
  const rssBefore = process.memoryUsage.rss();
  const youngBefore = young();
  const started = process.hrtime.bigint();
  gcFunction()({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  const tookMs = Number(process.hrtime.bigint() - started) / 1e6;
  return { rssBefore, rssAfter: process.memoryUsage.rss(), youngBefore, youngAfter: young(), tookMs };
}

/**
 * When to release after calls: {@link tick} runs every {@link IDLE_CHECK_EVERY_MS} with the number
 * of requests served so far. A tick that finds the count moved since the last one notes a burst;
 * the first tick after it that finds the count unchanged (a whole interval without a call)
 * releases, once. Under steady calls it never runs; a quiet daemon pays one collection per burst.
 */
export class IdleRelease {
  #seen = 0;
  #burst = false;

  constructor(private readonly release: () => void) {}

  /** @param served requests served since start (monotonic) */
  tick(served: number): void {
    if (served !== this.#seen) {
      this.#seen = served;
      this.#burst = true;
      return;
    }
    if (!this.#burst) return;
    this.#burst = false;
    this.release();
  }
}
