/**
 * Shared parts of the ImapMailbox integration tests (test/integration/uplink/imap-mailbox*.test.ts):
 * CRLF test mail, an imapflow logger that records the commands sent, readers of those commands,
 * and the check config and request for a folder of a test Dovecot.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'imapflow';
import type { ImapMailboxConfig } from '../../src/uplink/imap-mailbox.js';
import type { CheckRequest } from '../../src/uplink/mailbox.js';
import type { DovecotHandle } from './dovecot.js';

export const AGENT = 'agent@agent.example';
export const TAG = '[GROK:';

let seq = 0;
/** A CRLF message (what IMAP hands back, so bytes compare exactly). */
export function mail(o: { from?: string; subject?: string; body?: string } = {}): Buffer {
  seq++;
  return Buffer.from(
    `From: ${o.from ?? `Agent <${AGENT}>`}\r\nTo: me@bridge.test\r\nSubject: ${o.subject ?? `reply ${seq}`}\r\n` +
      `Date: Tue, 1 Jan 2030 12:00:00 +0000\r\nMessage-ID: <m${seq}.${Date.now()}@agent.example>\r\n\r\n${o.body ?? `body ${seq}\r\n`}`,
  );
}

/** An imapflow logger that keeps every entry; `commands` are the lines the client sent. */
export function recorder() {
  const entries: Record<string, unknown>[] = [];
  const keep = (o: unknown): void => {
    entries.push(typeof o === 'object' && o ? { ...(o as Record<string, unknown>) } : { msg: String(o) });
  };
  const logger: Logger = { debug: keep, info: keep, warn: keep, error: keep, trace: keep, fatal: keep };
  return {
    logger,
    entries,
    /** Client commands without their tag, e.g. `UID FETCH 3,4 (UID RFC822.SIZE)`. */
    commands: () => entries.filter((e) => e.src === 'c').map((e) => String(e.msg).replace(/^\S+ /, '')),
    /** Untagged server lines, e.g. `* SEARCH 3`. */
    serverLines: () => entries.filter((e) => e.src === 's').map((e) => String(e.msg)),
  };
}

/** The verb of a command: `UID FETCH`, `EXAMINE`, … */
export function verb(command: string): string {
  const [a = '', b = ''] = command.split(' ');
  return a.toUpperCase() === 'UID' ? `UID ${b.toUpperCase()}` : a.toUpperCase();
}

/** The UIDs a `UID FETCH <set> …` command touches. */
export function fetchedUids(command: string): number[] {
  const set = command.split(' ')[2] ?? '';
  return set.split(',').flatMap((part) => {
    const [lo, hi] = part.split(':').map(Number);
    if (hi === undefined) return [lo!];
    return Array.from({ length: hi - lo! + 1 }, (_, i) => lo! + i);
  });
}

/** A check request for the agent's mail and tagged mail, from UID 1, with `over` on top. */
export function req(over: Partial<CheckRequest> = {}): CheckRequest {
  return {
    watermark: { uidValidity: null, lastUid: 0 },
    fromAddresses: [AGENT],
    subjectContains: [TAG],
    maxFetch: 50,
    maxMessageBytes: 1024 * 1024,
    ...over,
  };
}

/**
 * The helpers bound to the file's Dovecot, read through `dovecot()` when called (it is started in
 * `beforeAll`): a fresh folder per test, the Maildir file of a message, a check config for a folder.
 */
export function onDovecot(dovecot: () => DovecotHandle) {
  let folderCount = 0;
  return {
    /** A fresh folder per test, so UIDs and UIDVALIDITY are the test's own. */
    freshFolder: async (): Promise<string> => {
      const name = `T${++folderCount}`;
      await dovecot().createFolder(name);
      return name;
    },
    /** The file in Dovecot's Maildir (folder `.name/`, Maildir++) of the message whose text holds `marker`. */
    messageFile: (folder: string, marker: string): string => {
      for (const sub of ['cur', 'new']) {
        const dir = join(dovecot().maildir, `.${folder}`, sub);
        for (const f of readdirSync(dir)) if (readFileSync(join(dir, f), 'latin1').includes(marker)) return join(dir, f);
      }
      throw new Error(`no message with ${marker} in ${folder}`);
    },
    /** The config of an ImapMailbox reading `folder` as the test user, 5 s timeout, `over` on top. */
    config: (folder: string, over: Partial<ImapMailboxConfig> = {}): ImapMailboxConfig => {
      const d = dovecot();
      return {
        host: d.host, port: d.port, tls: false, user: d.user, password: d.password, folder, timeoutMs: 5000,
        ...over,
      };
    },
  };
}
