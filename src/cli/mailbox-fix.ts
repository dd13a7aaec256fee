/**
 * The one-line fix for a mailbox that could not be read, by {@link MailboxError} kind: what
 * `doctor` prints under a failed mailbox check, and what every other command (`provider detect
 * --from`, and main.ts for any MailboxError a command lets through) appends to its error line.
 */
import type { Config } from '../config/config.js';
import { MailboxError } from '../uplink/mailbox.js';
import { CliFailure } from './errors.js';

const IMAP_FIX: Record<MailboxError['kind'], string> = {
  auth: 'check mailbox.imap.user and the password in mailbox.imap.password_file (most providers want an app password)',
  connect: 'check mailbox.imap.host and port, and that this machine can reach the server',
  tls: 'check mailbox.imap.port and tls (port 993 with tls = true is implicit TLS)',
  timeout: 'check mailbox.imap.host, port and tls; the server did not answer in mailbox.imap.timeout_s',
  protocol: 'check mailbox.folder: it must name an existing folder, spelled as the server does',
  'answer-too-large': 'change what the message names (the mail in mailbox.folder, or mailbox.imap.host and port): the connection itself is fine',
  io: 'check the mailbox settings',
};

/**
 * @param mailbox the config's mailbox, when known: an OAuth2 grant that is gone is fixed by
 *   signing in again (never by a password), a Maildir by its path
 */
export function mailboxFix(err: MailboxError, mailbox?: Config['mailbox']): string {
  const oauth2 = mailbox?.imap?.oauth2;
  if (oauth2 && err.kind === 'auth') return `sign in again: ${oauth2.login}`;
  if (mailbox?.kind === 'maildir' || (!mailbox && err.kind === 'io')) return 'check mailbox.maildir.path: it must name a Maildir (a folder holding cur/ and new/) this user can read';
  return IMAP_FIX[err.kind];
}

/** `err` as a CliFailure (exit 1) whose one line is the problem and its fix; any other error as it is. */
export function asCliFailure(err: unknown, mailbox?: Config['mailbox']): unknown {
  return err instanceof MailboxError ? new CliFailure(`${err.message}; ${mailboxFix(err, mailbox)}`, { cause: err }) : err;
}
