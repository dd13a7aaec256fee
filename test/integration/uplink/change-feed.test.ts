import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/log.js';
import { imapIdleFeed, type ChangeCause } from '../../../src/uplink/change-feed.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { startImapProxy, type ImapProxy } from '../faults/imap-faults.js';

/**
 * IMAP IDLE from the first second: after a connect and after a forced reconnect, the catch-up
 * signal comes at once and the next mail is announced by the server's IDLE notice. imapflow's own
 * auto-IDLE starts only after 15 s of quiet; the waits below give up after 10 s, well before it.
 */
let dovecot: DovecotHandle;
let proxy: ImapProxy;

beforeAll(async () => {
  dovecot = await startDovecot();
  proxy = await startImapProxy(dovecot.port);
});
afterAll(async () => {
  await proxy?.close();
  await dovecot?.stop();
});

const mail = (n: number) => `From: agent@agent.example\r\nSubject: [GROK:x] reply ${n}\r\nMessage-ID: <r${n}@agent.example>\r\n\r\nbody\r\n`;

describe('the IMAP IDLE change feed', () => {
  it('announces the first mail after a connect and after a forced reconnect by the IDLE notice', async () => {
    const causes: ChangeCause[] = [];
    const waiters: { n: number; resolve: () => void }[] = [];
    const onChange = (cause: ChangeCause): void => {
      causes.push(cause);
      for (const w of waiters.splice(0)) if (causes.length >= w.n) w.resolve();
      else waiters.push(w);
    };
    /** Resolves when `n` signals have come; rejects after 10 s (imapflow's own IDLE would start at 15 s). */
    const signals = (n: number): Promise<void> =>
      causes.length >= n
        ? Promise.resolve()
        : new Promise((resolve, reject) => {
            const t = setTimeout(() => reject(new Error(`${causes.length} signal(s) after 10 s, waited for ${n}: ${causes.join(', ')}`)), 10_000);
            waiters.push({ n, resolve: () => (clearTimeout(t), resolve()) });
          });
    const abort = new AbortController();
    const cfg = { host: dovecot.host, port: proxy.port, tls: false, user: dovecot.user, password: dovecot.password, timeoutMs: 5000, folder: 'INBOX' };
    const running = imapIdleFeed(cfg, createLogger('silent')).run(onChange, abort.signal);
    try {
      await signals(1);
      await dovecot.append(mail(1));
      await signals(2);
      expect(causes).toEqual(['connected', 'exists']);

      // The proxy cuts the connection; the feed reconnects (after its 1 s backoff) and catches up.
      await proxy.setMode('refuse');
      await proxy.setMode('pass');
      await signals(3);
      await dovecot.append(mail(2));
      await signals(4);
      expect(causes).toEqual(['connected', 'exists', 'connected', 'exists']);
    } finally {
      abort.abort();
      await running;
    }
  });
});
