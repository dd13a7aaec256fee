import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Store } from '../store/store.js';
import { TASK_STATES } from '../store/task-state.js';

/**
 * The bridge's Prometheus metrics, exposed at `GET /metrics` in the text format.
 * Counters count since the process started; the task and ledger gauges are read from the store
 * at each scrape, so they survive restarts. No label carries task content or an address.
 */
export class BridgeMetrics {
  readonly registry = new Registry();
  /** Ledger verdicts recorded by this process, by verdict name. */
  readonly verdicts: Counter<'verdict'>;
  /** Webhook POSTs by outcome (`accepted`, `retry`, `failed`, `gone`) and kind (`dispatch`, `cancel`). */
  readonly attempts: Counter<'outcome' | 'kind'>;
  /** Mailbox checks by result (`ok`, `error`). */
  readonly checks: Counter<'result'>;
  /** Duration of one mailbox check, in s. */
  readonly checkSeconds: Histogram;
  /** From the mailbox receiving a reply (IMAP INTERNALDATE, Maildir mtime) to its promotion, in s. */
  readonly promotionSeconds: Histogram;

  constructor(store: Store) {
    const registers = [this.registry];
    this.verdicts = new Counter({ name: 'a2a_mailbridge_verdicts_total', help: 'Mail ledger verdicts recorded since start, by verdict', labelNames: ['verdict'], registers });
    this.attempts = new Counter({ name: 'a2a_mailbridge_webhook_attempts_total', help: 'Webhook POSTs since start, by outcome and kind', labelNames: ['outcome', 'kind'], registers });
    this.checks = new Counter({ name: 'a2a_mailbridge_mailbox_checks_total', help: 'Mailbox checks since start, by result', labelNames: ['result'], registers });
    this.checkSeconds = new Histogram({
      name: 'a2a_mailbridge_mailbox_check_duration_seconds',
      help: 'Duration of one mailbox check',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.promotionSeconds = new Histogram({
      name: 'a2a_mailbridge_reply_promotion_delay_seconds',
      help: 'Time from a reply arriving in the mailbox to its promotion (or late recording)',
      buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900, 3600],
      registers,
    });
    new Gauge({
      name: 'a2a_mailbridge_tasks',
      help: 'Tasks in the store, by state',
      labelNames: ['state'],
      registers,
      collect() {
        const by = store.stats.tasksByState();
        for (const s of TASK_STATES) this.set({ state: s }, by[s] ?? 0);
      },
    });
    new Gauge({
      name: 'a2a_mailbridge_ledger_messages',
      help: 'Messages in the mail ledger, by verdict',
      labelNames: ['verdict'],
      registers,
      collect() {
        this.reset();
        for (const [verdict, n] of Object.entries(store.stats.ledgerByVerdict())) this.set({ verdict }, n);
      },
    });
    new Gauge({
      name: 'a2a_mailbridge_dispatches_pending',
      help: 'Webhook dispatches waiting for an attempt',
      registers,
      collect() {
        this.set(store.stats.dispatchesByState().pending ?? 0);
      },
    });
  }

  /** The text exposition (content type `text/plain; version=0.0.4`). */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
