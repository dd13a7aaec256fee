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

/** A Maildir folder watched with fs.watch on `new/` and `cur/`; a failed watch is retried with backoff. */
export function maildirFeed(dir: string, log: Logger): ChangeFeed {
  return {
    async run(onChange, signal) {
      let failures = 0;
      while (!signal.aborted) {
        const watchers: FSWatcher[] = [];
        try {
          const failed = new Promise<void>((resolve) => {
            for (const sub of ['new', 'cur']) {
              const w = watch(join(dir, sub), () => onChange('exists'));
              w.on('error', (err) => (log.warn({ err: err.message }, 'Maildir watch failed'), resolve()));
              watchers.push(w);
            }
            signal.addEventListener('abort', () => resolve(), { once: true });
          });
          onChange('connected');
          failures = 0;
          await failed;
        } catch (err) {
          log.warn({ err: (err as Error).message }, 'Maildir watch could not start');
        } finally {
          for (const w of watchers) w.close();
        }
        if (signal.aborted) break;
        await sleep(reconnectDelayMs(++failures), signal);
      }
    },
  };
}
