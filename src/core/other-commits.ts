import type { Store } from '../store/store.js';
import type { TaskChanged } from './events.js';

/**
 * How often the store is asked whether another process committed, while anything listens (an
 * open stream: src/core/task-follow.ts), in ms. One `PRAGMA data_version` read (Store.generation):
 * a read of the WAL index, no I/O.
 */
export const OTHER_COMMIT_POLL_MS = 1000;

/**
 * What one look found: another process committed. `shared` is the same map for every listener of
 * that look, so the streams of one task build one change from it (their updates are rendered once
 * per change object: src/core/task-follow.ts).
 */
export type OtherCommitListener = (shared: Map<string, TaskChanged>) => void;

/**
 * Commits by other processes, as events: the CLI's `cancel` and `retry` change tasks in the store
 * with no task event of this process (src/core/events.ts announces this process's commits only),
 * so a stream that follows a task would never hear of them (a task canceled from the CLI left its
 * SubscribeToTask stream open until the client gave up). While at least one listener is
 * registered, the store's generation is read every {@link OTHER_COMMIT_POLL_MS}; each time it shows
 * another connection's commit (Store.otherCommits), every listener is called once. No listener, no
 * timer; the timer never keeps the process alive.
 */
export class OtherCommits {
  readonly #listeners = new Set<OtherCommitListener>();
  #timer: NodeJS.Timeout | undefined;
  #seen = 0;

  constructor(
    private readonly store: Pick<Store, 'generation' | 'otherCommits'>,
    private readonly everyMs = OTHER_COMMIT_POLL_MS,
  ) {}

  /** Registers `listener` until the returned function is called. */
  on(listener: OtherCommitListener): () => void {
    if (this.#listeners.size === 0) {
      this.store.generation();
      this.#seen = this.store.otherCommits();
      this.#timer = setInterval(() => this.look(), this.everyMs);
      this.#timer.unref();
    }
    this.#listeners.add(listener);
    return () => {
      if (!this.#listeners.delete(listener) || this.#listeners.size > 0) return;
      clearInterval(this.#timer);
      this.#timer = undefined;
    };
  }

  /** One look (the timer's; a test may call it): the listeners hear of other processes' commits since the last. */
  look(): void {
    try {
      this.store.generation();
    } catch {
      // The store busy past its timeout, or closed under a stream still ending: the next look tries again.
      return;
    }
    const n = this.store.otherCommits();
    if (n === this.#seen) return;
    const before = this.#seen;
    this.#seen = n;
    const shared = new Map<string, TaskChanged>();
    for (const l of [...this.#listeners]) {
      try {
        l(shared);
      } catch {
        // A listener that could not read the store (busy past its timeout) hears of it again at the
        // next look; the others ignore what they already know (task-follow.ts compares the row).
        this.#seen = before;
      }
    }
  }
}

const byStore = new WeakMap<object, OtherCommits>();

/** The one {@link OtherCommits} of `store` (made on first use). */
export function otherCommitsOf(store: Pick<Store, 'generation' | 'otherCommits'>): OtherCommits {
  let w = byStore.get(store);
  if (!w) byStore.set(store, (w = new OtherCommits(store)));
  return w;
}
