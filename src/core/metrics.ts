import { createRequire } from 'node:module';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Store } from '../store/store.js';
import { TASK_STATES } from '../store/task-state.js';

// prom-client is loaded by the first scrape of `GET /metrics` (or once many observations wait),
// not at start: a bridge nobody scrapes never pays for it (memory and start-up: bench/RESULTS.md,
// machine-limit). Until then counts and observations are kept here and handed over on loading.
const require = createRequire(import.meta.url);

/** Observations kept before prom-client is loaded; one more loads it (so what waits stays bounded). */
const MAX_WAITING = 10_000;

type Labels = Record<string, string>;

/** A counter's or histogram's members as the bridge uses them. */
export interface CounterLike<L extends string> {
  inc(labels: Record<L, string>): void;
}
export interface HistogramLike {
  /** @param value in s */
  observe(value: number): void;
}

interface Instruments {
  registry: Registry;
  verdicts: Counter<'verdict'>;
  attempts: Counter<'outcome' | 'kind'>;
  checks: Counter<'result'>;
  streamRenders: Counter<'stage'>;
  viewRenders: Counter<'stage'>;
  checkSeconds: Histogram;
  promotionSeconds: Histogram;
}

/**
 * The bridge's Prometheus metrics, exposed at `GET /metrics` in the text format.
 * Counters count since the process started; the task and ledger gauges are read from the store
 * at each scrape, so they survive restarts. No label carries task content or an address.
 */
export class BridgeMetrics {
  /** Ledger verdicts recorded by this process, by verdict name. */
  readonly verdicts: CounterLike<'verdict'>;
  /** Webhook POSTs by outcome (`accepted`, `retry`, `failed`, `gone`) and kind (`dispatch`, `cancel`). */
  readonly attempts: CounterLike<'outcome' | 'kind'>;
  /** Mailbox checks by result (`ok`, `error`). */
  readonly checks: CounterLike<'result'>;
  /**
   * What streams rendered, by stage: `view`, a task view built for a committed change
   * (src/core/task-follow.ts), and `event`, an event serialised for the wire (src/a2a/methods-stream.ts).
   * Both are made once per change (and dialect) and shared by every stream of the task
   * (docs/streaming.md, "One render per change"), so N streams add no views and no events but their first.
   */
  readonly streamRenders: CounterLike<'stage'>;
  /**
   * What task views and push notifications cost, by stage: `view`, a GetTask view or ListTasks page
   * built (not answered from src/core/view-cache.ts); `fence`, an agent text cleaned and fenced
   * (once per reply while src/core/fence-memo.ts keeps it, not once per view); and `push`,
   * a push body rendered (once per change, dialect and agent, shared by every configuration of the
   * task and by retries while the task is unchanged: src/core/push-bodies.ts).
   */
  readonly viewRenders: CounterLike<'stage'>;
  /** Duration of one mailbox check, in s. */
  readonly checkSeconds: HistogramLike;
  /** From the mailbox receiving a reply (IMAP INTERNALDATE, Maildir mtime) to its promotion, in s. */
  readonly promotionSeconds: HistogramLike;

  #real: Instruments | null = null;
  /** What waits for prom-client: replayed in order when it loads. */
  #waiting: ((m: Instruments) => void)[] = [];

  constructor(private readonly store: Store) {
    const counter = <L extends string>(pick: (m: Instruments) => Counter<L>): CounterLike<L> => ({
      inc: (labels) => this.#record((m) => pick(m).inc(labels as Labels)),
    });
    const histogram = (pick: (m: Instruments) => Histogram): HistogramLike => ({
      observe: (v) => this.#record((m) => pick(m).observe(v)),
    });
    this.verdicts = counter((m) => m.verdicts);
    this.attempts = counter((m) => m.attempts);
    this.checks = counter((m) => m.checks);
    this.streamRenders = counter((m) => m.streamRenders);
    this.viewRenders = counter((m) => m.viewRenders);
    this.checkSeconds = histogram((m) => m.checkSeconds);
    this.promotionSeconds = histogram((m) => m.promotionSeconds);
  }

  #record(apply: (m: Instruments) => void): void {
    if (this.#real) return apply(this.#real);
    this.#waiting.push(apply);
    if (this.#waiting.length > MAX_WAITING) this.#load();
  }

  /** Loads prom-client, makes the instruments and replays what waited. */
  #load(): Instruments {
    if (this.#real) return this.#real;
    const prom = require('prom-client') as typeof import('prom-client');
    const registers = [new prom.Registry()];
    const store = this.store;
    const m: Instruments = {
      registry: registers[0]!,
      verdicts: new prom.Counter({ name: 'a2a_mailbridge_verdicts_total', help: 'Mail ledger verdicts recorded since start, by verdict', labelNames: ['verdict'], registers }),
      attempts: new prom.Counter({ name: 'a2a_mailbridge_webhook_attempts_total', help: 'Webhook POSTs since start, by outcome and kind', labelNames: ['outcome', 'kind'], registers }),
      checks: new prom.Counter({ name: 'a2a_mailbridge_mailbox_checks_total', help: 'Mailbox checks since start, by result', labelNames: ['result'], registers }),
      streamRenders: new prom.Counter({
        name: 'a2a_mailbridge_stream_renders_total',
        help: 'Task views (stage view) and wire events (stage event) rendered for streams since start; one per change and dialect, however many streams',
        labelNames: ['stage'],
        registers,
      }),
      viewRenders: new prom.Counter({
        name: 'a2a_mailbridge_view_renders_total',
        help: 'GetTask/ListTasks views built (stage view), agent texts fenced (stage fence: once per reply while memoised) and push bodies rendered (stage push: once per change, dialect and agent) since start',
        labelNames: ['stage'],
        registers,
      }),
      checkSeconds: new prom.Histogram({
        name: 'a2a_mailbridge_mailbox_check_duration_seconds',
        help: 'Duration of one mailbox check',
        buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers,
      }),
      promotionSeconds: new prom.Histogram({
        name: 'a2a_mailbridge_reply_promotion_delay_seconds',
        help: 'Time from a reply arriving in the mailbox to its promotion (or late recording)',
        buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900, 3600],
        registers,
      }),
    };
    new prom.Gauge({
      name: 'a2a_mailbridge_tasks',
      help: 'Tasks in the store, by state',
      labelNames: ['state'],
      registers,
      collect(this: Gauge<'state'>) {
        const by = store.stats.tasksByState();
        for (const s of TASK_STATES) this.set({ state: s }, by[s] ?? 0);
      },
    });
    new prom.Gauge({
      name: 'a2a_mailbridge_ledger_messages',
      help: 'Messages in the mail ledger, by verdict',
      labelNames: ['verdict'],
      registers,
      collect(this: Gauge<'verdict'>) {
        this.reset();
        for (const [verdict, n] of Object.entries(store.stats.ledgerByVerdict())) this.set({ verdict }, n);
      },
    });
    new prom.Gauge({
      name: 'a2a_mailbridge_dispatches_pending',
      help: 'Webhook dispatches waiting for an attempt',
      registers,
      collect(this: Gauge) {
        this.set(store.stats.dispatchesByState().pending ?? 0);
      },
    });
    this.#real = m;
    for (const apply of this.#waiting.splice(0)) apply(m);
    return m;
  }

  /** The text exposition (content type `text/plain; version=0.0.4`). */
  async render(): Promise<{ contentType: string; body: string }> {
    const { registry } = this.#load();
    return { contentType: registry.contentType, body: await registry.metrics() };
  }
}
