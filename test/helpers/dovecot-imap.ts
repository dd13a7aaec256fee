/**
 * The IMAP client side of a test Dovecot (see dovecot.ts): one short imapflow session per call,
 * and the handle's mailbox helpers (APPEND, CREATE, DELETE, flags, UIDVALIDITY) built on it.
 */
import { ImapFlow } from 'imapflow';
import type { DovecotHandle } from './dovecot.js';

/** The handle's helpers that talk IMAP to the server. */
export type DovecotImapHelpers = Pick<DovecotHandle, 'append' | 'createFolder' | 'deleteFolder' | 'flagsOf' | 'uidValidity'>;

/**
 * Runs `fn` in one plaintext IMAP session on 127.0.0.1:`port` as `user`, logged out afterwards.
 * @throws whatever connecting or `fn` throws.
 */
export async function withImap<T>(port: number, user: string, password: string, fn: (c: ImapFlow) => Promise<T>): Promise<T> {
  const c = new ImapFlow({
    host: '127.0.0.1', port, secure: false, doSTARTTLS: false, auth: { user, pass: password },
    logger: false, disableAutoIdle: true, connectionTimeout: 5000, greetingTimeout: 5000, socketTimeout: 10_000,
  });
  c.on('error', () => {}); // imapflow #302: an unhandled 'error' would kill the test process
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.logout().catch(() => c.close());
  }
}

/** The mailbox helpers of a handle for the Dovecot on `port`, each in a session of its own. */
export function imapHelpers(port: number, user: string, password: string): DovecotImapHelpers {
  const client = <T>(fn: (c: ImapFlow) => Promise<T>): Promise<T> => withImap(port, user, password, fn);
  return {
    append: (raw, o = {}) =>
      client(async (c) => {
        const folder = o.folder ?? 'INBOX';
        const r = await c.append(folder, typeof raw === 'string' ? Buffer.from(raw) : raw, o.flags ?? []);
        if (!r || r.uid === undefined) throw new Error(`APPEND to ${folder} gave no UID (no UIDPLUS?)`);
        return r.uid;
      }),
    createFolder: (name) =>
      client(async (c) => {
        await c.mailboxCreate(name);
      }),
    deleteFolder: (name) =>
      client(async (c) => {
        await c.mailboxDelete(name);
      }),
    flagsOf: (uid, folder = 'INBOX') =>
      client(async (c) => {
        await c.mailboxOpen(folder, { readOnly: true });
        const m = await c.fetchOne(String(uid), { flags: true }, { uid: true });
        if (!m) throw new Error(`no message with UID ${uid} in ${folder}`);
        // \Recent is a per-session flag, not a stored one: leave it out so before/after compare.
        return [...(m.flags ?? [])].filter((f) => f !== '\\Recent').sort();
      }),
    uidValidity: (folder = 'INBOX') =>
      client(async (c) => {
        const s = await c.status(folder, { uidValidity: true });
        if (!s || s.uidValidity === undefined) throw new Error(`STATUS ${folder} gave no UIDVALIDITY`);
        return s.uidValidity;
      }),
  };
}
