import type { BridgeContext } from './context.js';

/** A step back shorter than this is left alone (ms): it delays a retry by less than a second. */
const MIN_STEP_MS = 1000;

/**
 * Keeps webhook retries and push retries on their delays when the bridge clock is stepped back
 * (NTP, a laptop's wake, an operator's `date -s`). Their times are stored as wall-clock times
 * (`turns.next_attempt_at`, `push_deliveries.next_attempt_at`); a step back of Δ would otherwise
 * hold each of them Δ longer than its backoff — an hour's step, an hour without a retry.
 *
 * {@link observe} keeps the latest time the bridge has seen (at the first call: the last mailbox
 * check's time from the store, so a step while the bridge was stopped counts too). When the clock
 * reads more than {@link MIN_STEP_MS} behind it, every pending attempt time moves back by the step
 * in one transaction (`Store.schedule.stepBack`) and a warning is logged with the step.
 *
 * Deadlines are not moved: a deadline is a wall-clock time the envelope states to the agent.
 * An attempt time set after the step but before the next observe moves too, and runs early by up
 * to the step; the bridge observes before every refresh, webhook attempt and push round, so that
 * is a retry whose POST was under way while the clock stepped.
 */
export class ClockSteps {
  #latest: number | null = null;

  constructor(private readonly ctx: Pick<BridgeContext, 'store' | 'now' | 'log' | 'mailbox'>) {}

  /** Compares the clock with the latest time seen, moving pending attempt times back after a step back. Never throws. */
  observe(): void {
    const now = this.ctx.now();
    try {
      this.#latest ??= Math.max(now, this.ctx.store.mailbox.state(this.ctx.mailbox.folder).lastCheckAt ?? now);
      const by = this.#latest - now;
      if (by < MIN_STEP_MS) {
        this.#latest = Math.max(this.#latest, now);
        return;
      }
      const moved = this.ctx.store.tx((tx) => tx.schedule.stepBack(by));
      this.#latest = now;
      this.ctx.log.warn({ steppedBackMs: by, webhookAttempts: moved.dispatches, pushDeliveries: moved.pushes }, 'clock stepped back: pending attempt times moved back by the step');
    } catch (err) {
      this.ctx.log.error({ err: (err as Error).message }, 'could not move pending attempt times after a clock step');
    }
  }
}
