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
 * Bounded in entries ({@link VIEW_CACHE_MAX_ENTRIES}) and in weight ({@link VIEW_CACHE_MAX_WEIGHT}:
 * the characters and bytes the views hold, as the weigher given says); the least
 * recently used entry goes first. A value heavier than {@link VIEW_ENTRY_MAX_WEIGHT} is not kept:
 * the same task read with each historyLength from 0 to 511 would otherwise be kept 512 times, its
 * 1 MiB message or 10 MiB reply in each (and each view's serialised answer beside it).
 * A value handed out is shared by every caller that gets it from the cache: callers must not
 * change it (SendMessage, which prepends notes, builds its own view).
 */

/** Most views kept (GetTask views and ListTasks pages together). */
export const VIEW_CACHE_MAX_ENTRIES = 512;

/** Most weight kept, summed over the entries: characters of text and bytes of files (see src/core/task-view.ts viewWeight). */
export const VIEW_CACHE_MAX_WEIGHT = 16 * 1024 * 1024;

/** The heaviest value kept: a quarter of {@link VIEW_CACHE_MAX_WEIGHT}. */
export const VIEW_ENTRY_MAX_WEIGHT = VIEW_CACHE_MAX_WEIGHT / 4;

/** How long a view whose text counts time is kept, in ms of the bridge clock. */
export const TIMED_VIEW_MAX_AGE_MS = 1000;

interface Entry<V> {
  value: V;
  /** When it was built (bridge clock, ms); null for a view whose text does not count time. */
  timedAt: number | null;
  weight: number;
}

export class ViewCache<V> {
  readonly #entries = new Map<string, Entry<V>>();
  #generation = -1;
  /** The weight of the entries kept. */
  #weight = 0;
  /** The key most recently got or set: already last in the order, so a hit on it moves nothing. */
  #last: string | null = null;

  /**
   * @param max most entries kept (≥ 1)
   * @param weigh what a value holds (characters and bytes: src/core/task-view.ts viewWeight); none by default
   * @param maxWeight most weight kept; a value heavier than a quarter of it is not kept
   */
  constructor(
    private readonly max = VIEW_CACHE_MAX_ENTRIES,
    private readonly weigh: (value: V) => number = () => 0,
    private readonly maxWeight = VIEW_CACHE_MAX_WEIGHT,
  ) {}

  /**
   * The value kept under `key`, if still valid at this store generation and bridge time.
   * @param generation Store.generation() now
   * @param now the bridge clock, ms
   */
  get(key: string, generation: number, now: number): V | undefined {
    if (generation !== this.#generation) {
      this.clear();
      this.#generation = generation;
      return undefined;
    }
    const e = this.#entries.get(key);
    if (!e) return undefined;
    if (e.timedAt !== null && (now < e.timedAt || now - e.timedAt >= TIMED_VIEW_MAX_AGE_MS)) {
      this.#drop(key, e);
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
      this.clear();
      this.#generation = generation;
    }
    const old = this.#entries.get(key);
    if (old) this.#drop(key, old);
    const weight = this.weigh(value);
    if (weight > this.maxWeight / 4) return;
    this.#entries.set(key, { value, timedAt, weight });
    this.#weight += weight;
    this.#last = key;
    while (this.#entries.size > this.max || this.#weight > this.maxWeight) {
      const [oldest, e] = this.#entries.entries().next().value!;
      this.#drop(oldest, e);
    }
  }

  #drop(key: string, e: Entry<V>): void {
    this.#entries.delete(key);
    this.#weight -= e.weight;
    if (this.#last === key) this.#last = null;
  }

  /** Entries kept now. */
  get size(): number {
    return this.#entries.size;
  }

  /** The weight of the entries kept now. */
  get weight(): number {
    return this.#weight;
  }

  /** Forgets every entry (a task change announced: src/core/events.ts). */
  clear(): void {
    this.#entries.clear();
    this.#weight = 0;
    this.#last = null;
  }
}
