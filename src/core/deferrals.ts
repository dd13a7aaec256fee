import type { Store } from '../store/store.js';
import { IndexedHeap } from './indexed-heap.js';
import { TEMPORARY_RETRY_MS } from './judge.js';

/**
 * Messages a mailbox check deferred because a DKIM key lookup failed temporarily (gate 7,
 * src/core/judge.ts `TEMPORARY_RETRY_MS`), and when each may be tried again (attack review 6, F3).
 *
 * A deferred message gets no ledger row, so it stays a candidate: the watermark never passes it
 * (src/core/mail-check.ts `PassWatermark`), a Maildir lists it again, and a restart finds it again
 * — the retry itself needs no record. What is kept here, in memory, is only the backoff: a message
 * is tried again after {@link DEFER_FIRST_WAIT_MS}, then twice as long each time, at most
 * {@link DEFER_MAX_WAIT_MS}, so over the 24 h a deferral lasts a message is tried at most about 30
 * times (a restart forgets the waits: the message is tried on its first check). The judge refuses
 * it for good on the first try past those 24 h after arrival (every input leaves a trace).
 *
 * A message held is remembered here too ({@link Deferrals.held}): once a key lookup failed in a
 * check, the agent's later mail signed only under the failing selectors is left unread (it could
 * cost a lookup timeout each) until the deferred message is tried again (src/core/mail-check.ts),
 * so a flood of such mail costs one whole read and one lookup timeout per failing selector and
 * backoff (a check, once more are waiting than are kept), and the agent's mail under a working
 * selector is still judged (attack review 7, F1).
 * Every message remembered and not due yet is handed out by the mailbox unread, costing a lookup
 * here and none of the check's prefix budget (attack review 7, F2: read again by every check,
 * such mail took the whole budget and the mail behind it was never read).
 *
 * At most {@link DEFER_MAX_KEPT} messages are remembered; past that a held one (never tried: no
 * backoff is lost), else the one that may be tried soonest, is forgotten (it is read, and tried
 * or held again, at the next check); of those due at the same ms, the one remembered (or changed)
 * first. They are kept in that order in a binary heap (src/core/indexed-heap.ts), so remembering
 * one and forgetting another costs O(log n) comparisons, at most 40 for 1,000: the scan of every
 * one kept that it replaced cost 1,000 a message, ~1,000,000 for a check that held 1,000 (attack
 * review). A task's view asks {@link Deferrals.taskWaitsSince} through an index by task, kept with
 * every change.
 */

/** First wait before a deferred message is tried again, in ms. */
export const DEFER_FIRST_WAIT_MS = 60_000;
/** Longest wait between two tries of a deferred message, in ms. */
export const DEFER_MAX_WAIT_MS = 3600_000;
/** Deferred and held messages whose waits are remembered, at most (so too the held mail a check gives its prefix back: src/core/mail-check.ts). */
export const DEFER_MAX_KEPT = 1000;
/**
 * The longest a message can wait for its verdict after its first deferral, ms: a deferral lasts 24 h
 * from arrival (judge.ts `TEMPORARY_RETRY_MS`), and the last wait may run past that by one backoff.
 */
const MAX_AGE_MS = TEMPORARY_RETRY_MS + DEFER_MAX_WAIT_MS;

interface Waiting {
  /** Key lookups tried and deferred so far (a hold is not a try). */
  tries: number;
  nextAt: number;
  /** When it was first deferred or held (by this process), ms since the epoch. */
  since: number;
  /** The task it is tagged for (only a message tried and deferred names one). */
  taskId: string | undefined;
}

/** A remembered {@link Waiting}, with when it was remembered or last changed (a count: ties of the forgetting order). */
interface Kept extends Waiting {
  order: number;
}

/** The remembered messages tagged for one task: their first-deferral times, and the earliest (null: to be found again). */
interface TaskWaits {
  since: Map<string, number>;
  min: number | null;
}

/**
 * The deferred (and held) messages of one store (one bridge), by their ledger source key, with an
 * index by task so a task's view asks {@link Deferrals.taskWaitsSince} without a scan of them all.
 */
export class Deferrals {
  readonly #waiting = new Map<string, Kept>();
  /** By task id, the sources tagged for it: every change to `#waiting` goes through `#put` and `#drop`, which keep it. */
  readonly #byTask = new Map<string, TaskWaits>();
  /** The sources of `#waiting`, the one to forget first on top (`#forgets`); kept by `#put` and `#drop`. */
  readonly #order = new IndexedHeap<string>((a, b) => this.#forgets(this.#waiting.get(a)!, this.#waiting.get(b)!));
  /** `Kept.order` of the last message remembered. */
  #puts = 0;

  /** True when `source` was deferred or held and its wait has not run out at `now` (ms since the epoch). */
  waits(source: string, now: number): boolean {
    const w = this.#waiting.get(source);
    return w !== undefined && w.nextAt > now;
  }

  /** `source`, tagged for `taskId`, was deferred (again) at `now`; how many times so far. */
  deferred(source: string, now: number, taskId?: string): number {
    const was = this.#waiting.get(source);
    const tries = (was?.tries ?? 0) + 1;
    this.#put(source, { tries, nextAt: now + Math.min(DEFER_MAX_WAIT_MS, DEFER_FIRST_WAIT_MS * 2 ** (tries - 1)), since: was?.since ?? now, taskId: taskId ?? was?.taskId });
    return tries;
  }

  /**
   * `source` was left unread at `now` (held: signed only under selectors whose key lookup failed in
   * this check) until `until`, when the message deferred under those selectors is tried again
   * ({@link dueAt}); until then a check skips it unread (src/core/mail-check.ts). Not a try: its
   * backoff and the task it was tagged for, if it was deferred before, are kept.
   */
  held(source: string, now: number, until: number): void {
    const was = this.#waiting.get(source);
    this.#put(source, { tries: was?.tries ?? 0, nextAt: Math.max(until, was?.nextAt ?? until), since: was?.since ?? now, taskId: was?.taskId });
  }

  /** When `source` may be tried again (ms since the epoch); null when it is not remembered. */
  dueAt(source: string): number | null {
    return this.#waiting.get(source)?.nextAt ?? null;
  }

  /**
   * When a message tagged for `taskId` was first deferred, of those still remembered; null when
   * none. From the index by task: O(1), or O(the task's own messages) once after one of them went.
   */
  taskWaitsSince(taskId: string): number | null {
    const t = this.#byTask.get(taskId);
    if (!t) return null;
    if (t.min === null) for (const since of t.since.values()) if (t.min === null || since < t.min) t.min = since;
    return t.min;
  }

  /** `source` has a verdict (or was never deferred). */
  done(source: string): void {
    this.#drop(source);
  }

  /**
   * Forgets what no longer waits for a verdict (attack review 7, F3: a deferred message deleted
   * from the mailbox stayed here, and its task's status said a reply was waiting, until a
   * restart): every message first deferred longer ago than a deferral lasts ({@link MAX_AGE_MS}),
   * and, when `listed` is given (a check that listed every candidate of the mailbox), every message
   * not among them.
   * @param now ms since the epoch
   * @param listed the sources of every candidate the check saw, when it saw them all
   */
  forgetGone(now: number, listed?: ReadonlySet<string>): void {
    for (const [source, w] of this.#waiting) if (now - w.since > MAX_AGE_MS || (listed !== undefined && !listed.has(source))) this.#drop(source);
  }

  /** Messages remembered. */
  get size(): number {
    return this.#waiting.size;
  }

  /** Tasks with a message remembered (the index's size: a test's check that it holds no task for nothing). */
  get tasks(): number {
    return this.#byTask.size;
  }

  /**
   * Comparisons of two remembered messages made so far to know which to forget when full (keeping
   * them in that order as each is remembered or dropped): the work that bound costs, counted for a
   * test (test/unit/core/deferrals.test.ts).
   */
  get steps(): number {
    return this.#order.compared;
  }

  /** Remembers `w` for `source` (replacing what was), forgetting the first in `#order` when {@link DEFER_MAX_KEPT} are kept. */
  #put(source: string, w: Waiting): void {
    this.#drop(source);
    if (this.#waiting.size >= DEFER_MAX_KEPT) this.#drop(this.#order.peek()!);
    this.#waiting.set(source, { ...w, order: ++this.#puts });
    this.#order.add(source);
    if (w.taskId === undefined) return;
    let t = this.#byTask.get(w.taskId);
    if (!t) this.#byTask.set(w.taskId, (t = { since: new Map(), min: null }));
    t.since.set(source, w.since);
    if (t.min !== null && w.since < t.min) t.min = w.since;
  }

  #drop(source: string): void {
    const w = this.#waiting.get(source);
    if (!w) return;
    this.#order.remove(source);
    this.#waiting.delete(source);
    if (w.taskId === undefined) return;
    const t = this.#byTask.get(w.taskId);
    if (!t) return;
    t.since.delete(source);
    if (t.since.size === 0) this.#byTask.delete(w.taskId);
    else if (t.min === w.since) t.min = null;
  }

  /**
   * True when `a` is forgotten before `b`: a held message (never tried: no backoff is lost) before
   * a deferred one, then the one due soonest, then the one remembered or changed first.
   */
  #forgets(a: Kept, b: Kept): boolean {
    if ((a.tries === 0) !== (b.tries === 0)) return a.tries === 0;
    return a.nextAt !== b.nextAt ? a.nextAt < b.nextAt : a.order < b.order;
  }
}

/** One {@link Deferrals} per store: it lives as long as the bridge's store, across checks. */
const perStore = new WeakMap<Store, Deferrals>();

/** The deferrals of `store`'s bridge. */
export function deferralsOf(store: Store): Deferrals {
  let d = perStore.get(store);
  if (!d) perStore.set(store, (d = new Deferrals()));
  return d;
}
