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
 *   the cache of views whose text counts time: one integer compare per call, never a stale view;
 * - the rest, views whose text does not count time (a COMPLETED task's, with its reply), are
 *   emptied by a new Store.untimedViewGeneration: every commit but a mailbox check's record, which
 *   only a timed view shows ("Mailbox last checked …"). A reply of 4 MB was serialised again after
 *   every check (every `check_interval_s`: 0.3–0.7 s of CPU each time, attack review 5);
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
 * A heavier value (a task with a reply of 2 MB or more: its text is in the history and in an
 * artifact) goes to a separate slot instead: at most {@link HEAVY_VIEW_SLOTS} such values, each of
 * at most {@link HEAVY_VIEW_MAX_WEIGHT}, under the same validity rules (attack review 4,
 * 2026-12-02: GetTask of a 4 MB reply rebuilt its view on every call, 0.85–1.8 s each). Their
 * agent texts are mostly the strings src/core/fence-memo.ts keeps (one string in the history and
 * the artifact), so the slots add little memory beyond it but the view's serialised answer per
 * dialect, which src/a2a/methods.ts keeps while the view lives (about twice the reply's text
 * each); a value heavier still is never kept.
 * A value handed out is shared by every caller that gets it from the cache: callers must not
 * change it (SendMessage, which prepends notes, builds its own view).
 */

/** Most views kept (GetTask views and ListTasks pages together). */
export const VIEW_CACHE_MAX_ENTRIES = 512;

/** Most weight kept, summed over the entries: characters of text and bytes of files (see src/core/task-view.ts viewWeight). */
export const VIEW_CACHE_MAX_WEIGHT = 16 * 1024 * 1024;

/** The heaviest value kept: a quarter of {@link VIEW_CACHE_MAX_WEIGHT}. */
export const VIEW_ENTRY_MAX_WEIGHT = VIEW_CACHE_MAX_WEIGHT / 4;

/** Values heavier than {@link VIEW_ENTRY_MAX_WEIGHT} kept at most (least recently used out). */
export const HEAVY_VIEW_SLOTS = 2;

/** The heaviest value a heavy slot keeps: a reply of twice the default mailbox.max_message_bytes (10 MB), counted in its history and its artifact. */
export const HEAVY_VIEW_MAX_WEIGHT = 48 * 1024 * 1024;

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
  /** The heavy slots: values over a quarter of maxWeight, not counted in #weight. */
  readonly #heavy = new Map<string, Entry<V>>();
  #generation = -1;
  /** The Store.untimedViewGeneration the entries were read at. */
  #untimedGeneration = -1;
  /** The weight of the entries kept. */
  #weight = 0;
  /** The key most recently got or set: already last in the order, so a hit on it moves nothing. */
  #last: string | null = null;

  /**
   * @param max most entries kept (≥ 1)
   * @param weigh what a value holds (characters and bytes: src/core/task-view.ts viewWeight); none by default
   * @param maxWeight most weight kept; a value heavier than a quarter of it goes to a heavy slot
   * @param heavySlots values over a quarter of maxWeight kept at most
   * @param heavyMaxWeight the heaviest value a heavy slot keeps
   */
  constructor(
    private readonly max = VIEW_CACHE_MAX_ENTRIES,
    private readonly weigh: (value: V) => number = () => 0,
    private readonly maxWeight = VIEW_CACHE_MAX_WEIGHT,
    private readonly heavySlots = HEAVY_VIEW_SLOTS,
    private readonly heavyMaxWeight = HEAVY_VIEW_MAX_WEIGHT,
  ) {}

  /**
   * The value kept under `key`, if still valid at these store generations and bridge time.
   * @param generation Store.generation() now
   * @param now the bridge clock, ms
   * @param untimedGeneration Store.untimedViewGeneration() now (default: `generation`, which
   *   empties every entry at each new generation)
   */
  get(key: string, generation: number, now: number, untimedGeneration = generation): V | undefined {
    if (!this.#at(generation, untimedGeneration)) return undefined;
    const heavy = this.#heavy.get(key);
    if (heavy) {
      if (!fresh(heavy, now)) {
        this.#heavy.delete(key);
        return undefined;
      }
      this.#heavy.delete(key);
      this.#heavy.set(key, heavy);
      return heavy.value;
    }
    const e = this.#entries.get(key);
    if (!e) return undefined;
    if (!fresh(e, now)) {
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
  set(key: string, generation: number, value: V, timedAt: number | null, untimedGeneration = generation): void {
    this.#at(generation, untimedGeneration);
    const old = this.#entries.get(key);
    if (old) this.#drop(key, old);
    this.#heavy.delete(key);
    const weight = this.weigh(value);
    if (weight > this.maxWeight / 4) {
      if (weight > this.heavyMaxWeight) return;
      this.#heavy.set(key, { value, timedAt, weight });
      while (this.#heavy.size > this.heavySlots) this.#heavy.delete(this.#heavy.keys().next().value!);
      return;
    }
    this.#entries.set(key, { value, timedAt, weight });
    this.#weight += weight;
    this.#last = key;
    while (this.#entries.size > this.max || this.#weight > this.maxWeight) {
      const [oldest, e] = this.#entries.entries().next().value!;
      this.#drop(oldest, e);
    }
  }

  /**
   * Moves the cache to these generations: a new untimed one empties it, a new generation only
   * drops the timed entries. False when anything was dropped or emptied (nothing to look up).
   */
  #at(generation: number, untimedGeneration: number): boolean {
    if (untimedGeneration !== this.#untimedGeneration) {
      this.clear();
      this.#generation = generation;
      this.#untimedGeneration = untimedGeneration;
      return false;
    }
    if (generation === this.#generation) return true;
    this.#generation = generation;
    for (const [key, e] of this.#entries) if (e.timedAt !== null) this.#drop(key, e);
    for (const [key, e] of this.#heavy) if (e.timedAt !== null) this.#heavy.delete(key);
    return true;
  }

  #drop(key: string, e: Entry<V>): void {
    this.#entries.delete(key);
    this.#weight -= e.weight;
    if (this.#last === key) this.#last = null;
  }

  /** Entries kept now, heavy slots included. */
  get size(): number {
    return this.#entries.size + this.#heavy.size;
  }

  /** Heavy slots used now. */
  get heavy(): number {
    return this.#heavy.size;
  }

  /** The weight of the entries kept now. */
  get weight(): number {
    return this.#weight;
  }

  /** Forgets every entry (a task change announced: src/core/events.ts). */
  clear(): void {
    this.#entries.clear();
    this.#heavy.clear();
    this.#weight = 0;
    this.#last = null;
  }
}

/** Whether an entry is still valid at bridge time `now` (see the module comment). */
function fresh(e: { timedAt: number | null }, now: number): boolean {
  return e.timedAt === null || (now >= e.timedAt && now - e.timedAt < TIMED_VIEW_MAX_AGE_MS);
}
