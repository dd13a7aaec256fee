import type { ChangeFeed } from '../uplink/change-feed.js';
import type { Bridge } from './bridge.js';

export interface Watcher {
  /** Stops the feed and the timer and waits for the check under way. */
  stop(): Promise<void>;
}

/**
 * The optional watcher (`mailbox.watch = true`): replies are applied as they land instead of on the
 * next call. Each change signal runs a check (concurrent signals fold into one check plus, if more
 * came in meanwhile, one more, so nothing that arrived mid-check is missed); a timer runs the
 * request-driven step — due webhook attempts, a due check, the deadline sweep — every `tickMs` even
 * when nobody calls.
 */
export function startWatcher(bridge: Bridge, feed: ChangeFeed | null, tickMs: number): Watcher {
  const abort = new AbortController();
  let dirty = false;
  let running: Promise<void> | null = null;
  const drain = async (): Promise<void> => {
    while (dirty && !abort.signal.aborted) {
      dirty = false;
      await bridge.checkNow();
    }
  };
  const onChange = (): void => {
    dirty = true;
    running ??= drain().finally(() => (running = null));
  };
  const feedRun = feed ? feed.run(onChange, abort.signal) : Promise.resolve();
  let ticking: Promise<void> | null = null;
  const timer = setInterval(() => {
    ticking ??= bridge.refresh().finally(() => (ticking = null));
  }, tickMs);
  timer.unref();
  return {
    async stop() {
      abort.abort();
      clearInterval(timer);
      await Promise.allSettled([feedRun, running, ticking]);
    },
  };
}
