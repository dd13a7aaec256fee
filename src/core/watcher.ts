import type { ChangeFeed } from '../uplink/change-feed.js';
import type { Bridge } from './bridge.js';

export interface Watcher {
  /** Stops the feed and the timer and waits for the check under way. */
  stop(): Promise<void>;
}

/**
 * The optional watcher (`mailbox.watch = true`): replies are applied as they land instead of on the
 * next call. Each change signal asks for a check that starts after it (`Bridge.checkAfterChange`):
 * a signal during a running check — whoever started it, a call, the timer or the watcher — gets
 * one more check after it, and the signals during one check fold into that one, so nothing that
 * arrived mid-check is missed. A timer runs the request-driven step — due webhook attempts, a due
 * check, the deadline sweep — every `tickMs` even when nobody calls.
 */
export function startWatcher(bridge: Bridge, feed: ChangeFeed | null, tickMs: number): Watcher {
  const abort = new AbortController();
  const checks = new Set<Promise<unknown>>();
  const onChange = (): void => {
    if (abort.signal.aborted) return;
    const p: Promise<unknown> = bridge.checkAfterChange().finally(() => checks.delete(p));
    checks.add(p);
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
      await Promise.allSettled([feedRun, ...checks, ticking]);
    },
  };
}
