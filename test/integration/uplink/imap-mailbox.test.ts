/**
 * ImapMailbox against a real Dovecot: which messages a check fetches and how (headers first, size
 * limits, paging), watermarks and UIDVALIDITY, unreadable messages, auth and folder errors.
 */
import { chmodSync, unlinkSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImapMailbox } from '../../../src/uplink/imap-mailbox.js';
import { MailboxError } from '../../../src/uplink/mailbox.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { AGENT, fetchedUids, mail, onDovecot, recorder, req, TAG, verb } from '../../helpers/imap-mailbox-kit.js';

let dovecot: DovecotHandle;

beforeAll(async () => {
  dovecot = await startDovecot();
});
afterAll(async () => {
  await dovecot?.stop();
});

const { config, freshFolder, messageFile } = onDovecot(() => dovecot);

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

  it('a folder over the search window: windows placed by message number (FETCH <n> (UID)), across UID gaps, from UID 1 and from a watermark', async () => {
    const folder = await freshFolder();
    for (let i = 1; i <= 10; i++) await dovecot.append(mail({ from: 'friend@else.example', body: `friend-${String(i).padStart(2, '0')}\r\n` }), { folder });
    const agent = [await dovecot.append(mail(), { folder }), await dovecot.append(mail(), { folder })];
    expect(agent).toEqual([11, 12]);
    // The person deletes friends 3 to 8: the folder holds UIDs 1, 2, 9, 10, 11, 12 (messages 1 to 6).
    for (let i = 3; i <= 8; i++) unlinkSync(messageFile(folder, `friend-0${i}`));
    const run = async (lastUid: number) => {
      const log = recorder();
      const uidValidity = lastUid ? (await dovecot.uidValidity(folder)).toString() : null;
      const r = await new ImapMailbox(config(folder), log.logger, { searchWindow: 2 }).check(req({ watermark: { uidValidity, lastUid } }));
      const cmds = log.commands();
      return {
        uids: r.messages.map((m) => m.uid),
        searches: cmds.filter((c) => verb(c) === 'UID SEARCH').map((c) => c.split(' ')[3]),
        byNumber: cmds.filter((c) => verb(c) === 'FETCH').map((c) => c.split(' ')[1]),
      };
    };
    // Messages 1–2, 3–4 (UIDs 9 and 10: the window ends at 10, not at 4), then 5–6, open.
    expect(await run(0)).toEqual({ uids: agent, searches: ['1:2', '3:10', '11:*'], byNumber: ['2', '4'] });
    // Above UID 9: message 4 (UID 10) is found by bisection, then messages 4–5 and the rest, open.
    expect(await run(9)).toEqual({ uids: agent, searches: ['10:11', '12:*'], byNumber: ['5', '3', '4'] });
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

  it('a missing folder is MailboxError protocol naming the folder and listing the folders there, their names escaped', async () => {
    // A folder name is server text: a bidi override in one must not reorder the line it is shown in.
    await dovecot.createFolder('Agents\u202eevil');
    const err = await new ImapMailbox(config('NoSuchFolder')).check(req()).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'MailboxError', kind: 'protocol' });
    const message = (err as Error).message;
    expect(message).toMatch(/^IMAP folder NoSuchFolder does not exist on [^;]+; the folders there: "/);
    expect(message).toContain('"INBOX"');
    expect(message).toContain('"Agents\\u{202e}evil"');
    expect(message).not.toContain('\u202e');
  });

  it('a folder deleted mid-check: the server hangs up, and the reconnect says what the first connect says, folders listed', async () => {
    const folder = await freshFolder();
    await dovecot.append(mail(), { folder });
    const log = recorder();
    const box = new ImapMailbox(config(folder), log.logger);
    const pass = await box.open(req()); // EXAMINEd and SEARCHed on the first connection
    // Deleted under the selected session: Dovecot hangs up on its next command (BYE), and the
    // FETCH goes on, UID by UID, on a fresh connection, whose EXAMINE finds no folder.
    await dovecot.deleteFolder(folder);
    const err = await pass.headers().catch((e: unknown) => e);
    await pass.close();
    expect(err).toMatchObject({ name: 'MailboxError', kind: 'protocol' });
    expect(log.serverLines()).toContain('* BYE FETCH failed: Mailbox was deleted under us');
    expect(log.commands().map(verb).filter((v) => v === 'EXAMINE')).toHaveLength(2); // the reconnect's EXAMINE
    const firstConnect = await new ImapMailbox(config(folder)).check(req()).catch((e: unknown) => e);
    expect((firstConnect as Error).message).toMatch(new RegExp(`^IMAP folder ${folder} does not exist on [^;]+; the folders there: .*"INBOX"`));
    expect((err as Error).message).toBe((firstConnect as Error).message);
  });
});
