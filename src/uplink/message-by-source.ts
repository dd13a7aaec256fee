/**
 * One message read whole again, read-only, by the `source` its ledger row names — for `doctor`,
 * whose judgement of a refused mail needs the whole of it (its DKIM signature covers the body),
 * where the ledger kept only its header block (mail refused before its body was read: src/core/
 * intake.ts). IMAP: EXAMINE, the folder's UIDVALIDITY compared with the source's (RFC 9051 §2.3.1.1:
 * another UIDVALIDITY, another message under that UID), one `UID FETCH BODY.PEEK[]` (imapflow's
 * `source`, no flag changes); a Maildir: the folder listed by unique name as a check lists it
 * (src/uplink/maildir-files.ts), the file read, nothing renamed. The bytes count only when they
 * are as many as the row's `size` and begin with the bytes the ledger kept: the very message
 * judged, not another that took its place.
 */
import type { ImapConfig } from '../config/config.js';
import { imapClient } from './imap-client.js';
import { listFolder, maildirSource, pathOf, readFileStart, type ListedEntry } from './maildir-files.js';

/** The mailbox a source is read from: the configured one. */
export type SourceMailbox =
  | { kind: 'imap'; folder: string; imap: ImapConfig; auth: () => Promise<{ user: string; pass: string } | { user: string; accessToken: string }> }
  | { kind: 'maildir'; folder: string };

/**
 * The message of ledger source `source` as the mailbox holds it now.
 * @param want the row's `size` (bytes) and the bytes its ledger row kept (`kept`, the header block:
 *   what the row's `raw_sha256` is the digest of): a message of another size is not read, one
 *   that does not begin with them not returned
 * @param maxBytes no message over this many bytes is read (`mailbox.max_message_bytes`)
 * @returns its bytes, or null when the mailbox no longer holds it (moved, deleted, another
 *   UIDVALIDITY, another message), it is over `maxBytes`, or the source is not of this mailbox
 * @throws what connecting to or reading the mailbox throws (a MailboxError, an imapflow error):
 *   the caller says the mail could not be read again
 */
export function messageBySource(mailbox: SourceMailbox, source: string, want: Wanted, maxBytes: number): Promise<Buffer | null> {
  return sourceReader(mailbox, maxBytes)(source, want);
}

/** What {@link messageBySource} takes a message by: its size and the bytes its ledger row kept. */
export interface Wanted {
  size: number;
  kept: Buffer;
}

/**
 * {@link messageBySource} for several sources of one mailbox: a Maildir is listed once, at the
 * first read, not once a message (a listing is linear in the folder: doctor reads up to 11 mails
 * again). Its listing is of that moment; a message moved since reads as gone.
 */
export function sourceReader(mailbox: SourceMailbox, maxBytes: number): (source: string, want: Wanted) => Promise<Buffer | null> {
  let listing: Promise<Map<string, ListedEntry>> | null = null;
  return async (source, want) => {
    if (want.size > maxBytes) return null;
    const raw = mailbox.kind === 'maildir' ? await fromMaildir(mailbox.folder, source, want.size, () => (listing ??= listFolder(mailbox.folder))) : await fromImap(mailbox, source, want.size);
    return raw !== null && raw.length === want.size && raw.subarray(0, want.kept.length).equals(want.kept) ? raw : null;
  };
}

async function fromMaildir(folder: string, source: string, size: number, listed: () => Promise<Map<string, ListedEntry>>): Promise<Buffer | null> {
  const prefix = maildirSource(folder, '');
  if (!source.startsWith(prefix)) return null;
  const entry = (await listed()).get(source.slice(prefix.length));
  if (!entry) return null;
  const read = await readFileStart(pathOf(folder, entry), size, false);
  return 'ok' in read && read.size === size ? read.ok : null;
}

async function fromImap(m: Extract<SourceMailbox, { kind: 'imap' }>, source: string, size: number): Promise<Buffer | null> {
  const prefix = `imap:${m.folder}:`;
  const rest = /^(\d+):(\d+)$/.exec(source.startsWith(prefix) ? source.slice(prefix.length) : '');
  if (!rest) return null;
  const [, uidValidity, uid] = rest as unknown as [string, string, string];
  const client = imapClient(m.imap, await m.auth(), { disableAutoIdle: true, socketTimeout: m.imap.timeoutMs });
  client.on('error', () => undefined); // imapflow #302; the failing command reports it
  try {
    await client.connect();
    const box = await client.mailboxOpen(m.folder, { readOnly: true });
    if (String(box.uidValidity) !== uidValidity) return null;
    const found = await client.fetchOne(uid, { uid: true, size: true }, { uid: true });
    if (!found || found.size !== size) return null;
    const whole = await client.fetchOne(uid, { uid: true, source: true }, { uid: true });
    return whole && whole.source ? whole.source : null;
  } finally {
    await client.logout().catch(() => client.close());
  }
}
