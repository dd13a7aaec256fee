import type { Schedule } from '../store/schedule.js';
import type { BridgeContext } from './context.js';

/**
 * The shortest wait between two checks of a failing Maildir, in ms: while its checks fail, the next
 * is due as long after the last as it has been failing, at least this and at most
 * `mailbox.check_interval_s` — 1 s, 1 s, 2 s, 4 s, 8 s … after the first failure — so a folder
 * back within seconds is seen within seconds, and one gone for long is looked at no more often
 * than a healthy one (fresh-user trial: a Maildir's `cur/` made again stayed "unreachable" for
 * 7 s, until new mail came). A failing IMAP mailbox keeps `check_interval_s`: a refused login
 * tried again within seconds is what gets an account locked by its provider, and a server back
 * from an outage is found by the IDLE feed's reconnect (`uplink/change-feed.ts`) with `mailbox.watch`.
 */
export const FAILING_RECHECK_MIN_MS = 1000;

/** What else a refresh starts when due, each saying when it next has work (bridge clock, ms; +Infinity for never). */
export interface DueSource {
  dueAt(): number;
}

/**
 * When the request-driven refresh (Bridge.refresh) has work, kept in memory (issue 17: a read when
 * nothing can be due asks the store nothing):
 *
 * - the store's schedule — the next webhook attempt, the next deadline (store/schedule.ts) and
 *   the last mailbox check's time (a check commits it) — read again only after the store changed
 *   (Store.generation: a commit here, or by another process within 1 ms);
 * - the earliest of everything a refresh may find due, taken at the end of each refresh with the
 *   generation then ({@link settle}). A read at the same generation before that time skips the
 *   refresh ({@link somethingDue}): one integer and one time compared.
 */
export class RefreshDue {
  private scheduled: Schedule & { generation: number; lastCheckAt: number | null; errorSince: number | null } = { generation: -1, nextDispatchAt: null, nextDeadlineAt: null, lastCheckAt: null, errorSince: null };
  private quiet = { generation: -1, at: Number.POSITIVE_INFINITY, until: Number.NEGATIVE_INFINITY };

  /** @param others the push worker and the store upkeep, which a refresh also runs */
  constructor(
    private readonly ctx: Pick<BridgeContext, 'store' | 'config' | 'mailbox' | 'now'>,
    private readonly others: readonly DueSource[],
  ) {}

  /** The store's schedule, the last check's time and since when checks fail, read from the store only when its generation changed. */
  schedule(): Schedule & { lastCheckAt: number | null; errorSince: number | null } {
    const generation = this.ctx.store.generation();
    if (generation !== this.scheduled.generation) {
      const { lastCheckAt, errorSince } = this.ctx.store.mailbox.state(this.ctx.mailbox.folder);
      this.scheduled = { generation, ...this.ctx.store.schedule.next(), lastCheckAt, errorSince };
    }
    return this.scheduled;
  }

  /**
   * How long after the last check the next is due, in ms: `mailbox.check_interval_s`, or while a
   * Maildir's checks fail, as long as they have failed, within [{@link FAILING_RECHECK_MIN_MS}, that interval].
   */
  private checkEveryMs(): number {
    const { lastCheckAt, errorSince } = this.schedule();
    const interval = this.ctx.config.mailbox.checkIntervalMs;
    if (lastCheckAt === null || errorSince === null || this.ctx.mailbox.kind !== 'maildir') return interval;
    return Math.min(interval, Math.max(FAILING_RECHECK_MIN_MS, lastCheckAt - errorSince));
  }

  /**
   * True when the last check is older than `mailbox.check_interval_s` (while a Maildir's checks
   * fail, than the shorter wait of {@link FAILING_RECHECK_MIN_MS}), or there was none, or it is
   * later than now: the clock was stepped back (NTP, a laptop's wake), and waiting for it to pass
   * the last check's time again would stop the mailbox checks for as long as the step.
   */
  checkDue(): boolean {
    const last = this.schedule().lastCheckAt;
    const now = this.ctx.now();
    return last === null || now < last || now - last >= this.checkEveryMs();
  }

  /**
   * Whether a refresh may have work: the store changed since the last {@link settle}, the clock
   * reached the earliest due time then, or went back behind that settle (see {@link checkDue}).
   * (Messages left waiting by the last check are the caller's to add: they are no store change.)
   */
  somethingDue(): boolean {
    const now = this.ctx.now();
    return this.ctx.store.generation() !== this.quiet.generation || now >= this.quiet.until || now < this.quiet.at;
  }

  /** Records, at the end of a refresh, until when the next one has nothing to do. */
  settle(): void {
    this.quiet = { generation: this.ctx.store.generation(), at: this.ctx.now(), until: this.dueAt() };
  }

  /**
   * The earliest time a refresh may find work, as of the store now: the next webhook attempt, the
   * next mailbox check, the next deadline (its sweep runs once it has passed: this is earlier or
   * equal), and what the others say. -Infinity when a check was never made, or the last one is
   * later than now (the clock went back: {@link checkDue}).
   */
  private dueAt(): number {
    const { nextDispatchAt, nextDeadlineAt, lastCheckAt } = this.schedule();
    if (lastCheckAt === null || lastCheckAt > this.ctx.now()) return Number.NEGATIVE_INFINITY;
    let at = Math.min(nextDispatchAt ?? Number.POSITIVE_INFINITY, lastCheckAt + this.checkEveryMs(), nextDeadlineAt ?? Number.POSITIVE_INFINITY);
    for (const o of this.others) at = Math.min(at, o.dueAt());
    return at;
  }
}
