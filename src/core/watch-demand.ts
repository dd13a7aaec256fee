import type { Logger } from 'pino';
import type { Watcher } from './watcher.js';

/** How long the watcher on demand keeps running after the last holder let go, in ms: a caller that polls by streaming reopens soon. */
export const WATCH_LINGER_MS = 60_000;

/**
 * The mailbox watcher on demand (docs/streaming.md, "Reading mail in the background"). With
 * `mailbox.watch = false` the bridge reads mail when a caller calls; but a stream or a push
 * notification has no call to ride on, so while one is open the watcher runs (IMAP IDLE or
 * fs.watch, plus the tick), and stops {@link WATCH_LINGER_MS} after the last holder let go. With
 * `mailbox.watch = true` the watcher runs all the time and holders change nothing.
 */
export class WatchDemand {
  #holders = 0;
  #watcher: Watcher | null = null;
  #linger: NodeJS.Timeout | null = null;
  #stopping: Promise<void> = Promise.resolve();

  constructor(
    private readonly start: () => Watcher,
    private readonly log: Logger,
    private readonly lingerMs = WATCH_LINGER_MS,
  ) {}

  /** Holds the watcher running; @returns the release (idempotent). */
  acquire(): () => void {
    this.#holders += 1;
    if (this.#linger) {
      clearTimeout(this.#linger);
      this.#linger = null;
    }
    if (!this.#watcher) {
      this.log.info('mailbox watched on demand (a stream or a push configuration is open)');
      this.#watcher = this.start();
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#holders -= 1;
      if (this.#holders === 0 && this.#watcher && !this.#linger) {
        this.#linger = setTimeout(() => this.#stopIdle(), this.lingerMs);
        this.#linger.unref();
      }
    };
  }

  /** True while the watcher runs. */
  get running(): boolean {
    return this.#watcher !== null;
  }

  #stopIdle(): void {
    this.#linger = null;
    if (this.#holders > 0 || !this.#watcher) return;
    const w = this.#watcher;
    this.#watcher = null;
    this.log.info('mailbox no longer watched (no stream or push configuration open)');
    this.#stopping = w.stop();
  }

  /** Stops the watcher whatever holds it (shutdown). */
  async stop(): Promise<void> {
    if (this.#linger) clearTimeout(this.#linger);
    this.#linger = null;
    const w = this.#watcher;
    this.#watcher = null;
    await Promise.allSettled([w?.stop(), this.#stopping]);
  }
}
