import { chmodSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Logger } from 'imapflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImapMailbox, RECONNECT_EVERY_MS, type ImapMailboxConfig } from '../../../src/uplink/imap-mailbox.js';
import { MailboxError, type CheckRequest } from '../../../src/uplink/mailbox.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';

const AGENT = 'agent@agent.example';
const TAG = '[GROK:';

let dovecot: DovecotHandle;
let folderCount = 0;

beforeAll(async () => {
  dovecot = await startDovecot();
});
afterAll(async () => {
  await dovecot?.stop();
});

let seq = 0;
/** A CRLF message (what IMAP hands back, so bytes compare exactly). */
function mail(o: { from?: string; subject?: string; body?: string } = {}): Buffer {
  seq++;
  return Buffer.from(
    `From: ${o.from ?? `Agent <${AGENT}>`}\r\nTo: me@bridge.test\r\nSubject: ${o.subject ?? `reply ${seq}`}\r\n` +
      `Date: Tue, 1 Jan 2030 12:00:00 +0000\r\nMessage-ID: <m${seq}.${Date.now()}@agent.example>\r\n\r\n${o.body ?? `body ${seq}\r\n`}`,
  );
}

/** The file in Dovecot's Maildir (folder `.name/`, Maildir++) of the message whose text holds `marker`. */
function messageFile(folder: string, marker: string): string {
  for (const sub of ['cur', 'new']) {
    const dir = join(dovecot.maildir, `.${folder}`, sub);
    for (const f of readdirSync(dir)) if (readFileSync(join(dir, f), 'latin1').includes(marker)) return join(dir, f);
  }
  throw new Error(`no message with ${marker} in ${folder}`);
}

/** A fresh folder per test, so UIDs and UIDVALIDITY are the test's own. */
async function freshFolder(): Promise<string> {
  const name = `T${++folderCount}`;
  await dovecot.createFolder(name);
  return name;
}

/** An imapflow logger that keeps every entry; `commands` are the lines the client sent. */
function recorder() {
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
function verb(command: string): string {
  const [a = '', b = ''] = command.split(' ');
  return a.toUpperCase() === 'UID' ? `UID ${b.toUpperCase()}` : a.toUpperCase();
}

/** The UIDs a `UID FETCH <set> …` command touches. */
function fetchedUids(command: string): number[] {
  const set = command.split(' ')[2] ?? '';
  return set.split(',').flatMap((part) => {
    const [lo, hi] = part.split(':').map(Number);
    if (hi === undefined) return [lo!];
    return Array.from({ length: hi - lo! + 1 }, (_, i) => lo! + i);
  });
}

function config(folder: string, over: Partial<ImapMailboxConfig> = {}): ImapMailboxConfig {
  return {
    host: dovecot.host, port: dovecot.port, tls: false, user: dovecot.user, password: dovecot.password, folder, timeoutMs: 5000,
    ...over,
  };
}

function req(over: Partial<CheckRequest> = {}): CheckRequest {
  return {
    watermark: { uidValidity: null, lastUid: 0 },
    fromAddresses: [AGENT],
    subjectContains: [TAG],
    maxFetch: 50,
    maxMessageBytes: 1024 * 1024,
    ...over,
  };
}

describe('ImapMailbox against Dovecot', () => {
  it('fetches only the agent mail and tagged mail: no FETCH ever names another message', async () => {
    const folder = await freshFolder();
    const friend = await dovecot.append(mail({ from: 'friend@else.example', subject: 'dinner?' }), { folder });
    const agentRaw = mail();
    const agent = await dovecot.append(agentRaw, { folder });
    const bank = await dovecot.append(mail({ from: 'bank@else.example', subject: 'statement' }), { folder });
    const taggedRaw = mail({ from: 'forwarder@else.example', subject: `Re: ${TAG}t-1] result` });
    const tagged = await dovecot.append(taggedRaw, { folder });
    const news = await dovecot.append(mail({ from: 'news@else.example', subject: 'grok news (no tag)' }), { folder });

    const log = recorder();
    const r = await new ImapMailbox(config(folder), log.logger).check(req());
    const uidValidity = (await dovecot.uidValidity(folder)).toString();
    expect(r).toMatchObject({ uidValidity, uidValidityChanged: false, more: false });
    expect(r.messages.map((m) => m.uid)).toEqual([agent, tagged]);
    expect(r.messages.map((m) => m.raw)).toEqual([agentRaw, taggedRaw]);
    expect(r.messages.map((m) => m.size)).toEqual([agentRaw.length, taggedRaw.length]);
    expect(r.messages.map((m) => m.source)).toEqual([`imap:${folder}:${uidValidity}:${agent}`, `imap:${folder}:${uidValidity}:${tagged}`]);
    // Each header block (BODY.PEEK[HEADER]), then each message whole.
    const head = (m: Buffer): number => m.indexOf('\r\n\r\n') + 4;
    expect(r.bytesFetched).toBe(head(agentRaw) + head(taggedRaw) + agentRaw.length + taggedRaw.length);

    const search = log.commands().filter((c) => verb(c) === 'UID SEARCH');
    // (imapflow logs atoms unquoted; `[GROK:` is a valid IMAP atom)
    expect(search).toEqual([`UID SEARCH UID 1:* OR FROM ${AGENT} SUBJECT ${TAG}`]);
    const touched = log.commands().filter((c) => verb(c) === 'UID FETCH').flatMap(fetchedUids);
    expect(touched.length).toBeGreaterThan(0);
    for (const other of [friend, bank, news]) expect(touched).not.toContain(other);
  });

  it('is read-only: EXAMINE, UID SEARCH and UID FETCH with BODY.PEEK only, and no flag changes', async () => {
    const folder = await freshFolder();
    const plain = await dovecot.append(mail(), { folder });
    const flagged = await dovecot.append(mail(), { folder, flags: ['\\Flagged'] });
    const big = await dovecot.append(mail({ body: `${'y'.repeat(20_000)}\r\n` }), { folder });
    const before = await Promise.all([plain, flagged, big].map((u) => dovecot.flagsOf(u, folder)));
    expect(before).toEqual([[], ['\\Flagged'], []]);

    const log = recorder();
    const r = await new ImapMailbox(config(folder), log.logger).check(req({ maxMessageBytes: 10_000 }));
    expect(r.messages.map((m) => [m.uid, m.tooLarge])).toEqual([[plain, false], [flagged, false], [big, true]]);

    const commands = log.commands();
    const verbs = commands.map(verb);
    const allowed = new Set(['ID', 'CAPABILITY', 'AUTHENTICATE', 'LOGIN', 'NAMESPACE', 'LIST', 'LSUB', 'EXAMINE', 'UID SEARCH', 'UID FETCH', 'LOGOUT']);
    expect(verbs.filter((v) => !allowed.has(v) && !/^[A-Za-z0-9+/=]+$/.test(v))).toEqual([]); // the base64 line is the SASL answer
    for (const banned of ['SELECT', 'STORE', 'UID STORE', 'EXPUNGE', 'UID EXPUNGE', 'MOVE', 'UID MOVE', 'COPY', 'UID COPY', 'CLOSE', 'APPEND']) {
      expect(verbs).not.toContain(banned);
    }
    expect(verbs).toContain('EXAMINE');
    const fetches = commands.filter((c) => verb(c) === 'UID FETCH');
    for (const f of fetches) expect(f).not.toMatch(/BODY\[|RFC822(?!\.SIZE)|BINARY\[/i); // only the PEEK forms
    expect(fetches.some((f) => f.includes('BODY.PEEK[]'))).toBe(true);
    expect(fetches.some((f) => f.includes('BODY.PEEK[HEADER]'))).toBe(true);

    const after = await Promise.all([plain, flagged, big].map((u) => dovecot.flagsOf(u, folder)));
    expect(after).toEqual(before); // in particular no \Seen
  });

  it('returns only UIDs above the watermark, even when `UID n:*` answers the highest existing UID', async () => {
    const folder = await freshFolder();
    const first = await dovecot.append(mail(), { folder });
    const second = await dovecot.append(mail(), { folder });
    const box = new ImapMailbox(config(folder));
    const { uidValidity } = await box.check(req());

    const log = recorder();
    const none = await new ImapMailbox(config(folder), log.logger).check(req({ watermark: { uidValidity, lastUid: second } }));
    expect(none.messages).toEqual([]);
    expect(none.more).toBe(false);
    // The pitfall is real on this server: it answered the highest UID for `UID <second+1>:*` …
    expect(log.commands()).toContain(`UID SEARCH UID ${second + 1}:* OR FROM ${AGENT} SUBJECT ${TAG}`);
    expect(log.serverLines()).toContain(`* SEARCH ${second}`);
    // … and nothing was fetched for it.
    expect(log.commands().filter((c) => verb(c) === 'UID FETCH')).toEqual([]);

    const one = await box.check(req({ watermark: { uidValidity, lastUid: first } }));
    expect(one.messages.map((m) => m.uid)).toEqual([second]);
  });

  it('rescans from UID 1 and reports uidValidityChanged when the folder was recreated', async () => {
    const folder = await freshFolder();
    const uid = await dovecot.append(mail(), { folder });
    const box = new ImapMailbox(config(folder));
    const first = await box.check(req());
    const watermark = { uidValidity: first.uidValidity, lastUid: uid };
    expect((await box.check(req({ watermark }))).messages).toEqual([]);

    // Delete and create again: Dovecot gives the new folder a new UIDVALIDITY and restarts UIDs at 1.
    await dovecot.deleteFolder(folder);
    await dovecot.createFolder(folder);
    const rawA = mail();
    const rawB = mail();
    const a = await dovecot.append(rawA, { folder });
    const b = await dovecot.append(rawB, { folder });
    expect(a).toBe(1);
    const r = await box.check(req({ watermark: { uidValidity: first.uidValidity, lastUid: 999 } }));
    const uidValidity = (await dovecot.uidValidity(folder)).toString();
    expect(uidValidity).not.toBe(first.uidValidity);
    expect(r).toMatchObject({ uidValidity, uidValidityChanged: true });
    expect(r.messages.map((m) => [m.uid, m.source, m.raw])).toEqual([
      [a, `imap:${folder}:${uidValidity}:${a}`, rawA],
      [b, `imap:${folder}:${uidValidity}:${b}`, rawB],
    ]);
  });

  it('fetches a re-uploaded copy again under its new UID (the ledger, not the reader, dedupes)', async () => {
    const folder = await freshFolder();
    const raw = mail();
    const uid1 = await dovecot.append(raw, { folder });
    const box = new ImapMailbox(config(folder));
    const first = await box.check(req());
    expect(first.messages.map((m) => m.uid)).toEqual([uid1]);
    const uid2 = await dovecot.append(raw, { folder });
    expect(uid2).toBeGreaterThan(uid1);
    const again = await box.check(req({ watermark: { uidValidity: first.uidValidity, lastUid: uid1 } }));
    expect(again.messages.map((m) => [m.uid, m.raw])).toEqual([[uid2, raw]]);
    expect(again.messages[0]!.source).not.toBe(first.messages[0]!.source);
  });

  it('hands over only the header block of a message above maxMessageBytes, flagged tooLarge', async () => {
    const folder = await freshFolder();
    const bigRaw = mail({ body: `${'z'.repeat(60_000)}\r\n` });
    const big = await dovecot.append(bigRaw, { folder });
    const smallRaw = mail();
    const small = await dovecot.append(smallRaw, { folder });
    const log = recorder();
    const r = await new ImapMailbox(config(folder), log.logger).check(req({ maxMessageBytes: 10_000 }));
    const header = bigRaw.subarray(0, bigRaw.indexOf('\r\n\r\n') + 4);
    expect(r.messages.map((m) => [m.uid, m.tooLarge, m.size])).toEqual([[big, true, bigRaw.length], [small, false, smallRaw.length]]);
    expect(r.messages[0]!.raw.toString()).toBe(header.toString());
    expect(r.messages[1]!.raw).toEqual(smallRaw);
    expect(r.bytesFetched).toBe(header.length + smallRaw.indexOf('\r\n\r\n') + 4 + smallRaw.length);
    const bodyFetches = log.commands().filter((c) => c.includes('BODY.PEEK[]'));
    expect(bodyFetches.flatMap(fetchedUids)).toEqual([small]); // the big body never crossed the wire
  });

  it('keeps the oldest maxFetch matches and says more are waiting', async () => {
    const folder = await freshFolder();
    const uids: number[] = [];
    for (let i = 0; i < 5; i++) uids.push(await dovecot.append(mail(), { folder }));
    const box = new ImapMailbox(config(folder));
    const page1 = await box.check(req({ maxFetch: 2 }));
    expect(page1.messages.map((m) => m.uid)).toEqual(uids.slice(0, 2));
    expect(page1.more).toBe(true);
    const page2 = await box.check(req({ maxFetch: 2, watermark: { uidValidity: page1.uidValidity, lastUid: uids[1]! } }));
    expect(page2.messages.map((m) => m.uid)).toEqual(uids.slice(2, 4));
    expect(page2.more).toBe(true);
    const page3 = await box.check(req({ maxFetch: 2, watermark: { uidValidity: page1.uidValidity, lastUid: uids[3]! } }));
    expect(page3.messages.map((m) => m.uid)).toEqual(uids.slice(4));
    expect(page3.more).toBe(false);
  });

  it('a message the server cannot FETCH is returned unreadable (fetch) and the messages around it are read', async () => {
    const folder = await freshFolder();
    const first = mail();
    const broken = mail({ subject: 'the broken one' });
    const last = mail();
    const uids = [];
    for (const m of [first, broken, last]) uids.push(await dovecot.append(m, { folder }));
    // A first check: Dovecot caches the header fields SEARCH needs (as it does for mail a client
    // has searched before), so below only the FETCH of the broken message needs its file.
    expect((await new ImapMailbox(config(folder)).check(req())).messages).toHaveLength(3);
    // The broken message's file, made unreadable for Dovecot's mail user: Dovecot then answers its
    // FETCH with "BYE FETCH failed: Internal error occurred" and hangs up.
    chmodSync(messageFile(folder, 'the broken one'), 0o000);
    const log = recorder();
    const r = await new ImapMailbox(config(folder), log.logger).check(req());
    expect(r.messages.map((m) => [m.uid, m.unreadable?.reason ?? 'read'])).toEqual([[uids[0], 'read'], [uids[1], 'fetch'], [uids[2], 'read']]);
    expect(r.messages.map((m) => m.raw)).toEqual([first, Buffer.alloc(0), last]);
    expect(r.messages[1]!.unreadable!.detail).toMatch(new RegExp(`^IMAP FETCH of UID ${uids[1]} in ${folder} refused twice: BYE FETCH failed: Internal error occurred`));
    expect(r.messages[1]!.size).toBe(broken.length);
    // Still read-only on every connection it took.
    const verbs = log.commands().map(verb);
    expect(verbs.filter((v) => v === 'EXAMINE').length).toBeGreaterThan(1); // the server hung up: a new connection
    for (const v of ['SELECT', 'STORE', 'UID STORE', 'COPY', 'UID COPY', 'MOVE', 'UID MOVE', 'EXPUNGE', 'UID EXPUNGE', 'APPEND']) expect(verbs).not.toContain(v);
  });

  it('reads nothing when there is nothing to narrow on', async () => {
    const folder = await freshFolder();
    await dovecot.append(mail(), { folder });
    const log = recorder();
    const r = await new ImapMailbox(config(folder), log.logger).check(req({ fromAddresses: [], subjectContains: [] }));
    expect(r.messages).toEqual([]);
    expect(log.commands().map(verb).filter((v) => v === 'UID SEARCH' || v === 'UID FETCH')).toEqual([]);
  });

  it('a wrong password is MailboxError auth, and neither the error nor the log holds the password', async () => {
    const folder = await freshFolder();
    const secret = 'Wrong-Secret-4711';
    const log = recorder();
    const err = await new ImapMailbox(config(folder, { password: secret }), log.logger).check(req()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MailboxError);
    expect(err).toMatchObject({ kind: 'auth', message: `IMAP login failed for ${dovecot.user}` });
    expect(JSON.stringify(err, Object.getOwnPropertyNames(err))).not.toContain(secret);
    expect(JSON.stringify(log.entries)).not.toContain(secret);
    expect(JSON.stringify(log.entries)).not.toContain(Buffer.from(secret).toString('base64').slice(0, 12));
  });

  it('a missing folder is MailboxError protocol naming the folder', async () => {
    const err = await new ImapMailbox(config('NoSuchFolder')).check(req()).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'MailboxError', kind: 'protocol' });
    expect((err as Error).message).toContain('NoSuchFolder');
  });
});

describe('ImapMailbox failures without Dovecot', () => {
  const servers: Server[] = [];
  const sockets = new Set<Socket>();
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  });

  /** A TCP server on 127.0.0.1 that runs `onConnection` for each client. */
  async function listen(onConnection: (s: Socket) => void): Promise<number> {
    const srv = createServer((s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
      onConnection(s);
    });
    servers.push(srv);
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    return (srv.address() as { port: number }).port;
  }

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

/**
 * A scripted IMAP server just good enough for imapflow's check: one message (UID 1, 100 bytes)
 * that matches, its header block served; with `stallBody` it sends 20 bytes of the 100-byte
 * literal of the whole message and then nothing.
 */
function fakeImap(s: Socket, o: { stallBody: boolean }): void {
  const body = Buffer.from(`From: ${AGENT}\r\nSubject: x\r\n\r\n`.padEnd(100, 'b'));
  s.write('* OK [CAPABILITY IMAP4rev1] fake ready\r\n');
  let buf = '';
  s.on('data', (d) => {
    buf += d.toString('latin1');
    for (let i = buf.indexOf('\r\n'); i >= 0; i = buf.indexOf('\r\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const [tag, ...rest] = line.split(' ');
      const cmd = rest.join(' ').toUpperCase();
      const ok = (text = 'done'): boolean => s.write(`${tag} OK ${text}\r\n`);
      // Untagged data, then the tagged OK (which, as in this fake from the start, is skipped if write() reports backpressure).
      const reply = (data: string | Buffer): void => {
        if (s.write(data)) ok();
      };
      if (cmd.startsWith('LOGIN')) ok('[CAPABILITY IMAP4rev1] logged in');
      else if (cmd.startsWith('CAPABILITY')) reply('* CAPABILITY IMAP4rev1\r\n');
      else if (cmd.startsWith('NAMESPACE')) reply('* NAMESPACE (("" ".")) NIL NIL\r\n');
      else if (cmd.startsWith('LIST')) reply('* LIST () "." INBOX\r\n');
      else if (cmd.startsWith('LSUB')) ok();
      else if (cmd.startsWith('EXAMINE')) {
        s.write('* 1 EXISTS\r\n* OK [UIDVALIDITY 7] ok\r\n* OK [UIDNEXT 2] ok\r\n');
        ok('[READ-ONLY] examined');
      } else if (cmd.startsWith('UID SEARCH')) reply('* SEARCH 1\r\n');
      else if (cmd.startsWith('UID FETCH') && cmd.includes('BODY.PEEK[HEADER]')) {
        const head = body.subarray(0, body.indexOf('\r\n\r\n') + 4);
        reply(Buffer.concat([Buffer.from(`* 1 FETCH (UID 1 RFC822.SIZE ${body.length} BODY[HEADER]<0> {${head.length}}\r\n`), head, Buffer.from(')\r\n')]));
      } else if (cmd.startsWith('UID FETCH') && cmd.includes('RFC822.SIZE')) reply(`* 1 FETCH (UID 1 RFC822.SIZE ${body.length})\r\n`);
      else if (cmd.startsWith('UID FETCH') && cmd.includes('BODY.PEEK[]')) {
        if (o.stallBody) s.write(Buffer.concat([Buffer.from(`* 1 FETCH (UID 1 BODY[] {${body.length}}\r\n`), body.subarray(0, 20)]));
        else reply(Buffer.concat([Buffer.from(`* 1 FETCH (UID 1 BODY[] {${body.length}}\r\n`), body, Buffer.from(')\r\n')]));
      } else if (cmd.startsWith('LOGOUT')) {
        if (s.write('* BYE bye\r\n') && ok()) s.end();
      } else s.write(`${tag} BAD unknown\r\n`);
    }
  });
}

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
