/**
 * A server that takes the TCP connection and closes it before any greeting (an IMAP daemon that
 * refuses the client, or expects TLS on the port): the check fails with a sentence an operator can
 * act on, the imapflow code kept in parentheses (fresh-user trial 12: doctor printed only
 * "failed: ClosedAfterConnectText").
 */
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectCause } from '../../../src/uplink/imap-codes.js';
import { ImapMailbox } from '../../../src/uplink/imap-mailbox.js';
import { MailboxError } from '../../../src/uplink/mailbox.js';
import { req } from '../../helpers/imap-mailbox-kit.js';

let server: Server;
beforeAll(async () => {
  server = createServer((s) => s.destroy()).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe('an IMAP server that closes the connection before its greeting', () => {
  it('fails the check with words, not only the library code', async () => {
    const port = (server.address() as { port: number }).port;
    const box = new ImapMailbox({ host: '127.0.0.1', port, tls: false, user: 'u', password: 'p', timeoutMs: 5000, folder: 'INBOX' });
    const err = await box.check(req()).then(
      () => null,
      (e: unknown) => e,
    );
    await box.close();
    expect(err).toBeInstanceOf(MailboxError);
    expect((err as MailboxError).kind).toBe('connect');
    expect((err as MailboxError).message).toBe(`IMAP connection to 127.0.0.1:${port} failed: ${connectCause('ClosedAfterConnectText')}`);
    expect((err as MailboxError).message).toContain('the server closed the connection before its greeting');
  });

  it('leaves system codes as every tool prints them', () => {
    expect(connectCause('ECONNREFUSED')).toBe('ECONNREFUSED');
  });
});
