import type { Store } from '../store/store.js';
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
 * At most {@link DEFER_MAX_KEPT} messages are remembered; past that the one that may be tried
 * soonest is forgotten (it is tried at the next check, one try more). Once a key lookup failed in
 * a check, the rest of that check leaves unread the agent's mail signed only under the failing
 * selectors (src/core/mail-check.ts), so a flood of such mail costs at most one whole read and one
 * lookup timeout per failing selector and check, and the agent's mail under a working selector is
 * still judged.
 */

/** First wait before a deferred message is tried again, in ms. */
export const DEFER_FIRST_WAIT_MS = 60_000;
/** Longest wait between two tries of a deferred message, in ms. */
export const DEFER_MAX_WAIT_MS = 3600_000;
/** Deferred messages whose waits are remembered, at most. */
export const DEFER_MAX_KEPT = 1000;
/**
 * The longest a message can wait for its verdict after its first deferral, ms: a deferral lasts 24 h
 * from arrival (judge.ts `TEMPORARY_RETRY_MS`), and the last wait may run past that by one backoff.
 */
const MAX_AGE_MS = TEMPORARY_RETRY_MS + DEFER_MAX_WAIT_MS;

interface Waiting {
  tries: number;
  nextAt: number;
  /** When it was first deferred (by this process), ms since the epoch. */
  since: number;
  /** The task it is tagged for. */
  taskId: string | undefined;
}

/** The deferred messages of one store (one bridge), by their ledger source key. */
export class Deferrals {
  readonly #waiting = new Map<string, Waiting>();

  /** True when `source` was deferred and its wait has not run out at `now` (ms since the epoch). */
  waits(source: string, now: number): boolean {
    const w = this.#waiting.get(source);
    return w !== undefined && w.nextAt > now;
  }

  /** `source`, tagged for `taskId`, was deferred (again) at `now`; how many times so far. */
  deferred(source: string, now: number, taskId?: string): number {
    const was = this.#waiting.get(source);
    const tries = (was?.tries ?? 0) + 1;
    this.#waiting.delete(source);
    if (this.#waiting.size >= DEFER_MAX_KEPT) this.#forgetSoonest();
    this.#waiting.set(source, { tries, nextAt: now + Math.min(DEFER_MAX_WAIT_MS, DEFER_FIRST_WAIT_MS * 2 ** (tries - 1)), since: was?.since ?? now, taskId });
    return tries;
  }

  /** When a message tagged for `taskId` was first deferred, of those still waiting; null when none. */
  taskWaitsSince(taskId: string): number | null {
    let since: number | null = null;
    for (const w of this.#waiting.values()) if (w.taskId === taskId && (since === null || w.since < since)) since = w.since;
    return since;
  }

  /** `source` has a verdict (or was never deferred). */
  done(source: string): void {
    this.#waiting.delete(source);
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
    for (const [source, w] of this.#waiting) if (now - w.since > MAX_AGE_MS || (listed !== undefined && !listed.has(source))) this.#waiting.delete(source);
  }

  /** Messages remembered. */
  get size(): number {
    return this.#waiting.size;
  }

  #forgetSoonest(): void {
    let soonest: [string, number] | null = null;
    for (const [source, w] of this.#waiting) if (!soonest || w.nextAt < soonest[1]) soonest = [source, w.nextAt];
    if (soonest) this.#waiting.delete(soonest[0]);
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
