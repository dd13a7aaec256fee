/**
 * ImapMailbox's connections: failures without Dovecot (refused, silent, a scripted server that
 * stalls mid-FETCH) and the session kept open between checks, as `serve` opens it, against Dovecot.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImapMailbox, RECONNECT_EVERY_MS } from '../../../src/uplink/imap-mailbox.js';
import { MailboxError } from '../../../src/uplink/mailbox.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { mail, onDovecot, recorder, req, verb } from '../../helpers/imap-mailbox-kit.js';
import { scriptedImap as fakeImap, scriptedServers } from '../../helpers/scripted-imap.js';

let dovecot: DovecotHandle;

beforeAll(async () => {
  dovecot = await startDovecot();
});
afterAll(async () => {
  await dovecot?.stop();
});

const { config, freshFolder } = onDovecot(() => dovecot);

describe('ImapMailbox failures without Dovecot', () => {
  const { servers, listen, stop } = scriptedServers();
  afterAll(stop);

  function box(port: number, timeoutMs: number): ImapMailbox {
    return new ImapMailbox({ host: '127.0.0.1', port, tls: false, user: 'u', password: 'p4ssw0rd-x', folder: 'INBOX', timeoutMs });
  }

  it('connection refused is MailboxError connect', async () => {
    const port = await listen(() => {});
    const srv = servers.pop()!;
    await new Promise((r) => srv.close(r)); // nothing listens there any more
    const err = await box(port, 2000).check(req()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MailboxError);
    expect(err).toMatchObject({ kind: 'connect' });
    expect((err as Error).message).toContain('ECONNREFUSED');
  });

  it('a server that accepts and never greets is MailboxError timeout within timeoutMs', async () => {
    const port = await listen(() => {}); // silent
    const started = Date.now();
    const err = await box(port, 400).check(req()).catch((e: unknown) => e);
    const elapsed = Date.now() - started;
    expect(err).toMatchObject({ name: 'MailboxError', kind: 'timeout' });
    expect(elapsed).toBeGreaterThanOrEqual(350);
    expect(elapsed).toBeLessThan(1500);
  });

  it('a server that stalls in the middle of a FETCH is MailboxError timeout', async () => {
    const port = await listen((s) => fakeImap(s, { stallBody: true }));
    const started = Date.now();
    const err = await box(port, 500).check(req()).catch((e: unknown) => e);
    const elapsed = Date.now() - started;
    expect(err).toMatchObject({ name: 'MailboxError', kind: 'timeout' });
    expect((err as Error).message).toContain('fetch');
    expect(elapsed).toBeLessThan(2500);
  });

  it('a server that hangs up on a FETCH and answers the reconnect\'s EXAMINE with NO: the check fails naming the EXAMINE (the NO was taken for a refusal of the message, the FETCH retried with no folder open: "NoMailboxSelected")', async () => {
    let connections = 0;
    // The first connection hangs up on the body's FETCH; the one the check opens after it is refused its EXAMINE.
    const port = await listen((s) => fakeImap(s, { stallBody: false, byeOnBody: connections === 0, examineNo: connections++ > 0 }));
    const r = await box(port, 2000)
      .check(req())
      .catch((e: unknown) => e);
    expect(r).toBeInstanceOf(MailboxError);
    expect((r as Error).message).toBe('IMAP examine failed: internal error');
    // One reconnect, not two per message (each taken as a refusal of that message).
    expect(connections).toBe(2);
  });

  it('close() aborts a running check and is idempotent', async () => {
    const port = await listen(() => {}); // silent: the check waits for the greeting
    const b = box(port, 10_000);
    const pending = b.check(req()).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await b.close();
    await b.close();
    const err = await pending;
    expect(Date.now() - started).toBeLessThan(1000);
    expect(err).toMatchObject({ name: 'MailboxError', kind: 'connect' });
  });
});

describe('ImapMailbox with keepSession (as serve opens it)', () => {
  /** The verbs sent since entry `from` of the recorder, in order. */
  const verbsSince = (log: ReturnType<typeof recorder>, from: number): string[] => log.commands().slice(from).map(verb);
  const LOGIN = /^(LOGIN|AUTHENTICATE)$/;
  const logins = (verbs: string[]): number => verbs.filter((v) => LOGIN.test(v)).length;

  it('checks with nothing new cost one STATUS; new mail is EXAMINEd and SEARCHed on the same connection; no login again until the reconnect', async () => {
    const folder = await freshFolder();
    const first = await dovecot.append(mail(), { folder });
    const log = recorder();
    let now = 0;
    const box = new ImapMailbox(config(folder), log.logger, { keepSession: true, now: () => now });
    try {
      const r1 = await box.check(req());
      expect(r1.messages.map((m) => m.uid)).toEqual([first]);
      expect(logins(verbsSince(log, 0))).toBe(1);
      const watermark = { uidValidity: r1.uidValidity, lastUid: first };

      let mark = log.commands().length;
      const none = await box.check(req({ watermark }));
      expect(none).toMatchObject({ uidValidity: r1.uidValidity, uidValidityChanged: false, messages: [] });
      expect(verbsSince(log, mark)).toEqual(['STATUS']);

      const second = await dovecot.append(mail(), { folder });
      mark = log.commands().length;
      const r2 = await box.check(req({ watermark }));
      expect(r2.messages.map((m) => m.uid)).toEqual([second]);
      const sent = verbsSince(log, mark);
      expect(sent.slice(0, 3)).toEqual(['STATUS', 'EXAMINE', 'UID SEARCH']);
      expect(logins(sent)).toBe(0);
      expect(sent.at(-1)).toBe('CLOSE');

      // RECONNECT_EVERY_MS after it connected, a check logs in and EXAMINEs afresh.
      now += RECONNECT_EVERY_MS;
      mark = log.commands().length;
      await box.check(req({ watermark: { uidValidity: r1.uidValidity, lastUid: second } }));
      const again = verbsSince(log, mark);
      expect(again).toEqual(expect.arrayContaining(['LOGOUT', 'EXAMINE']));
      expect(logins(again)).toBe(1);
    } finally {
      await box.close();
    }
    expect(log.commands().at(-1)).toBe('LOGOUT');
  });

  it("passes the person's other mail after the agent's once two SEARCHes saw it: then a check with nothing new is one STATUS (attack review 8)", async () => {
    const folder = await freshFolder();
    const agent = await dovecot.append(mail(), { folder });
    let last = agent;
    for (let i = 0; i < 3; i++) last = await dovecot.append(mail({ from: `person${i}@elsewhere.test`, subject: `other ${i}` }), { folder });
    const log = recorder();
    const box = new ImapMailbox(config(folder), log.logger, { keepSession: true });
    try {
      const uidValidity = (await dovecot.uidValidity(folder)).toString();
      // The agent's mail has its verdict; what came after it is not the narrowing's. One SEARCH
      // (a server's index may lag) leaves the watermark; the second passes the mail it saw too.
      let watermark = { uidValidity, lastUid: agent };
      for (const floor of [agent, last]) {
        const pass = await box.open(req({ watermark, isRecorded: () => true }));
        expect(await pass.headers()).toEqual([]);
        await pass.close();
        expect(pass.floor).toBe(floor);
        watermark = { uidValidity, lastUid: pass.floor };
      }
      const mark = log.commands().length;
      const next = await box.open(req({ watermark }));
      expect(await next.headers()).toEqual([]);
      await next.close();
      expect(verbsSince(log, mark)).toEqual(['STATUS']);
    } finally {
      await box.close();
    }
  });

  it('finds a folder deleted and created again at the next check (STATUS answers for the folder as it is now)', async () => {
    const folder = await freshFolder();
    const uid = await dovecot.append(mail(), { folder });
    const log = recorder();
    const box = new ImapMailbox(config(folder), log.logger, { keepSession: true });
    try {
      const first = await box.check(req());
      const watermark = { uidValidity: first.uidValidity, lastUid: uid };
      expect((await box.check(req({ watermark }))).messages).toEqual([]);

      await dovecot.deleteFolder(folder);
      await dovecot.createFolder(folder);
      const raw = mail();
      const a = await dovecot.append(raw, { folder });
      const mark = log.commands().length;
      const r = await box.check(req({ watermark }));
      const uidValidity = (await dovecot.uidValidity(folder)).toString();
      expect(uidValidity).not.toBe(first.uidValidity);
      expect(r).toMatchObject({ uidValidity, uidValidityChanged: true });
      expect(r.messages.map((m) => [m.uid, m.source, m.raw])).toEqual([[a, `imap:${folder}:${uidValidity}:${a}`, raw]]);
      expect(logins(verbsSince(log, mark))).toBe(0);
    } finally {
      await box.close();
    }
  });
});
