/**
 * Reads the newest message from one sender, read-only, for `provider detect --from`:
 * IMAP with EXAMINE, one `UID SEARCH FROM`, one `UID FETCH BODY.PEEK[]` (no flag changes), or a
 * Maildir's new/ and cur/ without renaming a file.
 */
import { closeSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ImapConfig } from '../config/config.js';
import { maxOf } from '../extremes.js';
import { missingFolderMessage } from './imap-folders.js';
import { imapClient } from './imap-client.js';
import { connectCause, kindOfCode } from './imap-codes.js';
import { MailboxError } from './mailbox.js';
import { fieldsNamed, parseHeaderBlock, parseSingleAddress, splitMessage } from './raw-headers.js';

/** Messages larger than this are not read (a reply the user received is far smaller), in bytes. */
const MAX_BYTES = 10 * 1024 * 1024;

function fromAddress(head: Buffer): string | null {
  const from = fieldsNamed(parseHeaderBlock(splitMessage(head).header).fields, 'from')[0];
  if (!from) return null;
  const a = parseSingleAddress(from.value);
  return 'address' in a ? a.address : null;
}

/**
 * @param auth what imapflow logs in with (`{ user, pass }` or `{ user, accessToken }`)
 * @returns the raw message, or null when the folder holds none from `address`
 * @throws MailboxError for connection, login and protocol failures
 */
export async function newestImapMessageFrom(cfg: ImapConfig & { folder: string }, auth: { user: string; pass?: string; accessToken?: string }, address: string): Promise<Buffer | null> {
  const client = imapClient(cfg, auth, { disableAutoIdle: true, socketTimeout: cfg.timeoutMs });
  client.on('error', () => undefined); // imapflow #302; the failing command reports it
  try {
    await client.connect();
    try {
      await client.mailboxOpen(cfg.folder, { readOnly: true });
    } catch (err) {
      if (!(err as { mailboxMissing?: boolean })?.mailboxMissing) throw err;
      throw new MailboxError(await missingFolderMessage(client, cfg.folder, cfg), 'protocol', { cause: err });
    }
    const uids = await client.search({ from: address }, { uid: true });
    if (!Array.isArray(uids) || uids.length === 0) return null;
    const newest = maxOf(uids, 0);
    const m = await client.fetchOne(String(newest), { uid: true, size: true }, { uid: true });
    if (!m || (m.size ?? 0) > MAX_BYTES) return null;
    const full = await client.fetchOne(String(newest), { uid: true, source: true }, { uid: true });
    return full && full.source ? full.source : null;
  } catch (err) {
    if (err instanceof MailboxError) throw err;
    const e = err as { authenticationFailed?: boolean; tlsFailed?: boolean; responseText?: string; message?: string; code?: string };
    if (e.authenticationFailed) throw new MailboxError(`IMAP login failed for ${cfg.user}`, 'auth', { cause: err });
    throw new MailboxError(`IMAP read of ${cfg.folder} on ${cfg.host}:${cfg.port} failed: ${e.code ? connectCause(e.code) : (e.responseText ?? e.message ?? String(err))}`, kindOfCode(e.code, e.tlsFailed), { cause: err });
  } finally {
    await client.logout().catch(() => client.close());
  }
}

/** The newest file (by mtime) in new/ and cur/ whose single From address is `address`; null if none. */
export function newestMaildirMessageFrom(dir: string, address: string): Buffer | null {
  let best: { path: string; mtime: number } | null = null;
  const want = address.toLowerCase();
  for (const sub of ['new', 'cur']) {
    let names: string[];
    try {
      names = readdirSync(join(dir, sub));
    } catch {
      continue;
    }
    for (const name of names) {
      const path = join(dir, sub, name);
      let st;
      try {
        st = statSync(path);
      } catch {
        continue;
      }
      if (!st.isFile() || st.size > MAX_BYTES || (best && st.mtimeMs <= best.mtime)) continue;
      const head = Buffer.alloc(Math.min(st.size, 64 * 1024));
      const fd = openSync(path, 'r');
      try {
        readSync(fd, head, 0, head.length, 0);
      } finally {
        closeSync(fd);
      }
      if (fromAddress(head) === want) best = { path, mtime: st.mtimeMs };
    }
  }
  return best ? readFileSync(best.path) : null;
}
