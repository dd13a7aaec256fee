import { statSync, watch, type FSWatcher } from 'node:fs';
import { basename, join } from 'node:path';
import type { Logger } from 'pino';
import { limitedLog } from '../log.js';
import type { ImapMailboxConfig } from './imap-mailbox.js';
import { imapClient } from './imap-client.js';
import { imapAuth } from './oauth2.js';

/**
 * A feed of "new mail may have arrived" signals for the watcher (`mailbox.watch`). It never reads a
 * message: the watcher answers each signal with an ordinary read-only check.
 */
export interface ChangeFeed {
  /**
   * Runs until `signal` aborts, calling `onChange` when the folder may hold new mail — `connected`
   * right after each (re)connect (mail may have come while no one watched), `exists` on a notice
   * from the server or the file system; reconnects on its own with backoff. Never rejects.
   */
  run(onChange: (cause: ChangeCause) => void, signal: AbortSignal): Promise<void>;
}

/** Why a feed signalled: a (re)connect's catch-up, or a new-mail notice. */
export type ChangeCause = 'connected' | 'exists';

/** The timers a feed waits on (ms); a test passes ones that need no waiting. */
export interface FeedClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realClock: FeedClock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Waits `ms`, or less when `signal` aborts; leaves no listener on `signal` (it lives as long as the feed). */
function sleep(ms: number, signal: AbortSignal, clock: FeedClock = realClock): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clock.clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const t = clock.setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Reconnect delay after `failures` consecutive failures, in ms: 1 s doubling to 60 s. */
export function reconnectDelayMs(failures: number): number {
  return Math.min(60_000, 1000 * 2 ** Math.max(0, failures - 1));
}

/**
 * IMAP IDLE (RFC 2177) on one long-lived connection: EXAMINE the folder (read-only), enter IDLE at
 * once and let imapflow keep it running (restarted every 5 min so NATs keep the connection), and
 * signal on `exists` (imapflow fires it on a read-only mailbox too). imapflow enters IDLE only
 * after `autoIdleDelay` of quiet (15 s by default), and no notice comes before: the delay is 0 here,
 * as the connection sends nothing else. Every (re)connect is followed by a catch-up signal. A
 * dropped connection is replaced after a backoff; an ImapFlow instance cannot reconnect, so each
 * connection is a new one.
 */
export function imapIdleFeed(cfg: ImapMailboxConfig, log: Logger): ChangeFeed {
  return {
    async run(onChange, signal) {
      let failures = 0;
      while (!signal.aborted) {
        let auth: Awaited<ReturnType<typeof imapAuth>>;
        try {
          auth = await imapAuth(cfg);
        } catch (err) {
          failures += 1;
          log.warn({ err: (err as Error).message }, 'IMAP IDLE could not sign in');
          await sleep(reconnectDelayMs(failures), signal);
          continue;
        }
        const client = imapClient(cfg, auth, { maxIdleTime: 5 * 60_000, autoIdleDelay: 0, socketTimeout: 10 * 60_000 });
        client.on('error', (err: Error) => log.warn({ err: err.message }, 'IMAP IDLE connection error'));
        const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
        const abort = (): void => void client.logout().catch(() => client.close());
        signal.addEventListener('abort', abort, { once: true });
        const started = Date.now();
        try {
          await client.connect();
          await client.mailboxOpen(cfg.folder, { readOnly: true });
          client.on('exists', () => onChange('exists'));
          log.info({ folder: cfg.folder }, 'watching the mailbox with IMAP IDLE');
          onChange('connected'); // mail that arrived while we were not connected
          await closed;
        } catch (err) {
          log.warn({ err: (err as Error).message }, 'IMAP IDLE could not start');
          client.close();
        } finally {
          signal.removeEventListener('abort', abort);
        }
        if (signal.aborted) break;
        failures = Date.now() - started > 60_000 ? 1 : failures + 1;
        const delay = reconnectDelayMs(failures);
        log.info({ delayMs: delay }, 'IMAP IDLE connection closed; reconnecting');
        await sleep(delay, signal);
      }
    },
  };
}

/** How a round of the Maildir feed's watches ended. */
type RoundEnd = 'failed' | 'rewatch' | 'aborted';

/** Least wait before the Maildir feed watches again after `new/`, `cur/` or the folder changed, in ms. */
export const REWATCH_MIN_MS = 100;
/** Most wait before it watches again, however often they change, in ms. */
export const REWATCH_MAX_MS = 2000;
/** A round of watches that lasted this long (ms) ends a streak of rewatches. */
export const REWATCH_QUIET_MS = 1000;
/**
 * File events one round of watches takes in a second at most; more end the round like a rewatch.
 * libuv reads the inotify queue until it is empty before the event loop goes on, and events that
 * alternate between two names or two watches are not merged by the kernel, so a writer who makes
 * them faster than they are handed to JavaScript (`touch cur` heard by the folder's watch and by
 * cur/'s own: 10 s of it held the event loop 10 s) would hold it as long as they write. The
 * catch-up check of the next round finds whatever came meanwhile; mail needs a few events each.
 */
export const FLOOD_EVENTS = 1000;
/** How often the feed says at most that it paused for a flood of events, in ms. */
const FLOOD_LOG_EVERY_MS = 60_000;

/**
 * Wait before the next round of the Maildir feed's watches when the last `streak` rounds each
 * ended within {@link REWATCH_QUIET_MS} of their start by a change of `new/`, `cur/` or the folder,
 * in ms: 100 ms doubling to 2 s. A genuine repair (`cur/` deleted, then made again; `mv` and a new
 * Maildir made at once) is a streak of one or two: it is watched and checked again within 100–200 ms; a loop
 * that deletes and makes `cur/` again gets one round (three inotify watches and a catch-up check)
 * every 2 s.
 */
export function rewatchDelayMs(streak: number): number {
  return Math.min(REWATCH_MAX_MS, REWATCH_MIN_MS * 2 ** Math.max(0, streak - 1));
}

let unknownBirths = 0;

/**
 * What is at `path` (a symlink followed, as fs.watch follows it) as `dev:ino:birth`, or null when
 * nothing is. A directory deleted and made again may get the same inode number (ext4 gives it back
 * at once): its birth time (statx) tells the two apart. Where the file system keeps none (0), each
 * call answers differently, so any change counts as a new folder.
 */
function folderAt(path: string): string | null {
  try {
    const s = statSync(path, { bigint: true });
    return `${s.dev}:${s.ino}:${s.birthtimeNs || `?${++unknownBirths}`}`;
  } catch {
    return null;
  }
}

/**
 * A Maildir folder watched with fs.watch on `new/` and `cur/`, and on the folder itself. A watch
 * on a directory follows that directory, not its name: once `cur/` is deleted its watch hears
 * nothing more, and one made again under the name is not watched (Linux inotify; fresh-user
 * trial: `cur/` made again went unseen until new mail came in `new/`); a Maildir folder renamed
 * (`mv Maildir Maildir.old`) is followed to its new name. So the folder's own watch ends the round
 * when what is at `new`, `cur` or the folder's own path is no longer what the round watches
 * ({@link folderAt}: made, deleted or renamed; Node reports a `touch` or `chmod` of a subdirectory
 * as a 'rename' too, and that ends nothing; the folder's own move or deletion comes under its
 * basename). The next round watches them again and signals `connected` (the catch-up check,
 * which also finds what changed while nothing watched), after {@link rewatchDelayMs}: 100 ms,
 * longer while rounds keep ending at once, and a round that hears more than
 * {@link FLOOD_EVENTS} events in a second ends too, so whoever can write into the Maildir cannot
 * make the feed re-add watches, or take events, in a loop that starves the event loop (attack
 * review: `/health` stalled 24.6 s under a `touch cur` loop). A subfolder missing when a round
 * starts is left to the folder's watch; a watch that fails (or the folder itself missing) is
 * retried with backoff ({@link reconnectDelayMs}).
 *
 * @param clock the timers of the waits between rounds (tests)
 */
export function maildirFeed(dir: string, log: Logger, clock: FeedClock = realClock): ChangeFeed {
  const self = basename(dir);
  const limited = limitedLog(log, FLOOD_LOG_EVERY_MS);
  return {
    async run(onChange, signal) {
      let failures = 0;
      let streak = 0;
      while (!signal.aborted) {
        const watchers: FSWatcher[] = [];
        let end: RoundEnd = 'failed';
        let finish: (how: RoundEnd) => void = () => {};
        const ended = new Promise<RoundEnd>((resolve) => (finish = resolve));
        const onAbort = (): void => finish('aborted');
        signal.addEventListener('abort', onAbort, { once: true });
        const started = clock.now();
        try {
          const failed = (err: Error): void => (log.warn({ err: err.message }, 'Maildir watch failed'), finish('failed'));
          let heard = 0;
          let since = started;
          /** Counts an event; false once this second's are too many (the round then ends). */
          const hear = (): boolean => {
            const t = clock.now();
            if (t - since >= 1000) [since, heard] = [t, 0];
            if (++heard <= FLOOD_EVENTS) return true;
            limited(t, 'warn', 'flood', { dir, events: heard }, 'Maildir watch paused: too many file events in a second; watching again shortly');
            finish('rewatch');
            return false;
          };
          // What each watch below is on; an event names one of them: is another there now?
          const watched = new Map<string, { path: string; at: string | null }>([[self, { path: dir, at: folderAt(dir) }]]);
          const top = watch(dir, (_event, name) => {
            if (!hear()) return;
            const w = name === null ? undefined : watched.get(name);
            if (name === null || (w && folderAt(w.path) !== w.at)) finish('rewatch');
          });
          top.on('error', failed);
          watchers.push(top);
          for (const sub of ['new', 'cur']) {
            const path = join(dir, sub);
            // Taken before the watch: a folder swapped in between is taken for a change (one more round), never the reverse.
            const at = folderAt(path);
            try {
              // An event named after the subfolder is about itself (its attributes; its deletion,
              // which the folder's watch hears), not about mail in it.
              const w = watch(path, (_event, name) => void (hear() && name !== sub && onChange('exists')));
              w.on('error', failed);
              watchers.push(w);
              watched.set(sub, { path, at });
            } catch (err) {
              if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
              watched.set(sub, { path, at: null }); // missing: the folder's watch says when it is made
            }
          }
          onChange('connected');
          failures = 0;
          end = await ended;
        } catch (err) {
          log.warn({ err: (err as Error).message }, 'Maildir watch could not start');
        } finally {
          for (const w of watchers) w.close();
          signal.removeEventListener('abort', onAbort);
        }
        if (signal.aborted) break;
        if (end === 'rewatch') {
          streak = clock.now() - started < REWATCH_QUIET_MS ? streak + 1 : 1;
          await sleep(rewatchDelayMs(streak), signal, clock);
        } else {
          streak = 0;
          await sleep(reconnectDelayMs(++failures), signal, clock);
        }
      }
    },
  };
}
