/**
 * The views GetTask and ListTasks answered with, kept while nothing they were read from can have
 * changed (issue 17: a poll of an unchanged task reads nothing from the store).
 *
 * Validity:
 * - the store's generation (Store.generation): it advances synchronously with every commit on this
 *   connection — each task change (the event of src/core/events.ts is announced after such a
 *   commit), but also the commits that change a view without changing its task: a poll's message
 *   in the history, a refused mail counted in the status, a mailbox check's time — and, within
 *   1 ms, with another process's commit (the CLI's `retry`, `prune`). Any new generation empties
 *   the cache: one integer compare per call, never a stale view;
 * - the bridge clock, for a view whose text counts time (a SUBMITTED or WORKING task: "since …
 *   (5 min)", "Deadline … (in 2 h)", "next check due at …"): kept at most {@link
 *   TIMED_VIEW_MAX_AGE_MS}, the resolution of those durations (src/core/time.ts humanDuration),
 *   and never when the clock went back.
 *
 * Bounded in entries ({@link VIEW_CACHE_MAX_ENTRIES}); the least recently used entry goes first.
 * A value handed out is shared by every caller that gets it from the cache: callers must not
 * change it (SendMessage, which prepends notes, builds its own view).
 */

/** Most views kept (GetTask views and ListTasks pages together). */
export const VIEW_CACHE_MAX_ENTRIES = 512;

/** How long a view whose text counts time is kept, in ms of the bridge clock. */
export const TIMED_VIEW_MAX_AGE_MS = 1000;

interface Entry<V> {
  value: V;
  /** When it was built (bridge clock, ms); null for a view whose text does not count time. */
  timedAt: number | null;
}

export class ViewCache<V> {
  readonly #entries = new Map<string, Entry<V>>();
  #generation = -1;
  /** The key most recently got or set: already last in the order, so a hit on it moves nothing. */
  #last: string | null = null;

  /** @param max most entries kept (≥ 1) */
  constructor(private readonly max = VIEW_CACHE_MAX_ENTRIES) {}

  /**
   * The value kept under `key`, if still valid at this store generation and bridge time.
   * @param generation Store.generation() now
   * @param now the bridge clock, ms
   */
  get(key: string, generation: number, now: number): V | undefined {
    if (generation !== this.#generation) {
      this.#entries.clear();
      this.#generation = generation;
      return undefined;
    }
    const e = this.#entries.get(key);
    if (!e) return undefined;
    if (e.timedAt !== null && (now < e.timedAt || now - e.timedAt >= TIMED_VIEW_MAX_AGE_MS)) {
      this.#entries.delete(key);
      return undefined;
    }
    // Most recently used last (a Map keeps insertion order).
    if (key !== this.#last) {
      this.#entries.delete(key);
      this.#entries.set(key, e);
      this.#last = key;
    }
    return e.value;
  }

  /**
   * Keeps `value` under `key`, as read at `generation` (read it before reading the store: a commit
   * between the two then only makes the entry miss).
   * @param timedAt the bridge clock when built, for a value whose text counts time; null otherwise
   */
  set(key: string, generation: number, value: V, timedAt: number | null): void {
    if (generation !== this.#generation) {
      this.#entries.clear();
      this.#generation = generation;
    }
    this.#entries.delete(key);
    this.#entries.set(key, { value, timedAt });
    this.#last = key;
    if (this.#entries.size > this.max) this.#entries.delete(this.#entries.keys().next().value!);
  }

  /** Entries kept now. */
  get size(): number {
    return this.#entries.size;
  }

  /** Forgets every entry (a task change announced: src/core/events.ts). */
  clear(): void {
    this.#entries.clear();
    this.#last = null;
  }
}
