import { watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
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

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
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

/**
 * A Maildir folder watched with fs.watch on `new/` and `cur/`, and on the folder itself. A watch
 * on a directory follows that directory, not its name: once `cur/` is deleted its watch hears
 * nothing more, and one made again under the name is not watched (Linux inotify; fresh-user
 * trial: `cur/` made again went unseen until new mail came in `new/`). So the folder's own watch
 * ends the round whenever an entry named `new` or `cur` is made, removed or renamed, and the next
 * round, at once, watches them again and signals `connected` (the catch-up check: within
 * milliseconds of the `mkdir`). A subfolder missing when a round starts is left to the folder's
 * watch; a watch that fails (or the folder itself missing) is retried with backoff.
 */
export function maildirFeed(dir: string, log: Logger): ChangeFeed {
  return {
    async run(onChange, signal) {
      let failures = 0;
      while (!signal.aborted) {
        const watchers: FSWatcher[] = [];
        let end: RoundEnd = 'failed';
        try {
          let finish: (how: RoundEnd) => void = () => {};
          const ended = new Promise<RoundEnd>((resolve) => (finish = resolve));
          const failed = (err: Error): void => (log.warn({ err: err.message }, 'Maildir watch failed'), finish('failed'));
          const top = watch(dir, (_event, name) => {
            if (name === null || name === 'new' || name === 'cur') finish('rewatch');
          });
          top.on('error', failed);
          watchers.push(top);
          for (const sub of ['new', 'cur']) {
            let w: FSWatcher;
            try {
              w = watch(join(dir, sub), () => onChange('exists'));
            } catch (err) {
              if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // the folder's watch says when it is made
              throw err;
            }
            w.on('error', failed);
            watchers.push(w);
          }
          signal.addEventListener('abort', () => finish('aborted'), { once: true });
          onChange('connected');
          failures = 0;
          end = await ended;
        } catch (err) {
          log.warn({ err: (err as Error).message }, 'Maildir watch could not start');
        } finally {
          for (const w of watchers) w.close();
        }
        if (signal.aborted) break;
        if (end !== 'rewatch') await sleep(reconnectDelayMs(++failures), signal);
      }
    },
  };
}
