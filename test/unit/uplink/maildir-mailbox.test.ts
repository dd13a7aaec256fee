import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { STAMP_PREFIX_BYTES } from '../../../src/uplink/gates.js';
import { checkAsUser } from '../../helpers/maildir-as-user.js';
import { CHECK_AGENT, checkRequest } from '../../helpers/check-request.js';
import { MailboxError } from '../../../src/uplink/mailbox.js';
import { deliverToMaildir, MAILDIR_HEADER_CAP_BYTES, MaildirMailbox, uniqueName } from '../../../src/uplink/maildir-mailbox.js';

const AGENT = CHECK_AGENT;
const T0 = Date.UTC(2025, 0, 1, 12, 0, 0); // a round mtime base in the past (future mtimes are clamped to now), in ms

function mail(o: { from?: string; subject?: string; body?: string }): Buffer {
  return Buffer.from(
    `From: ${o.from ?? `Agent <${AGENT}>`}\r\nTo: me@bridge.test\r\nSubject: ${o.subject ?? 'hello'}\r\n` +
      `Date: Tue, 1 Jan 2030 12:00:00 +0000\r\nMessage-ID: <${Math.random().toString(36).slice(2)}@agent.example>\r\n\r\n${o.body ?? 'body\r\n'}`,
  );
}

let dir: string;

/** Writes `new/<name>` (or `cur/`) with an exact mtime in ms. */
function put(name: string, raw: Buffer, mtimeMs: number, sub: 'new' | 'cur' = 'new'): string {
  const p = join(dir, sub, name);
  writeFileSync(p, raw);
  utimesSync(p, new Date(mtimeMs), new Date(mtimeMs));
  return p;
}

const req = checkRequest;

/** Every file under the Maildir with its mtime: what "changed nothing" compares. */
function snapshot(): string[] {
  return ['new', 'cur', 'tmp'].flatMap((sub) =>
    readdirSync(join(dir, sub)).map((n) => `${sub}/${n}@${statSync(join(dir, sub, n)).mtimeMs}`),
  ).sort();
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'mb-maildir-'));
  for (const sub of ['new', 'cur', 'tmp']) mkdirSync(join(dir, sub));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('MaildirMailbox', () => {
  it('returns matching mail oldest first by (mtime, unique name), with uid = mtime and a stable source key', async () => {
    const a = mail({ subject: 'first' });
    const b = mail({ subject: 'second' });
    const c = mail({ subject: 'third' });
    put('300.M1P1Q1.host', c, T0 + 3000);
    put('200.M1P1Q2.host', b, T0 + 1000, 'cur'); // same mtime as a: the unique name decides
    renameSync(join(dir, 'cur', '200.M1P1Q2.host'), join(dir, 'cur', '200.M1P1Q2.host:2,S'));
    put('100.M1P1Q3.host', a, T0 + 1000);
    const r = await new MaildirMailbox(dir).check(req());
    expect(r.messages.map((m) => m.source)).toEqual([
      `maildir:${dir}:100.M1P1Q3.host`,
      `maildir:${dir}:200.M1P1Q2.host`,
      `maildir:${dir}:300.M1P1Q1.host`,
    ]);
    expect(r.messages.map((m) => m.uid)).toEqual([T0 + 1000, T0 + 1000, T0 + 3000]);
    expect(r.messages.map((m) => m.raw)).toEqual([a, b, c]);
    expect(r.messages.map((m) => m.size)).toEqual([a.length, b.length, c.length]);
    expect(r.messages.every((m) => !m.tooLarge)).toBe(true);
    // Each header block read, then each message whole.
    const head = (m: Buffer): number => m.indexOf('\r\n\r\n') + 4;
    expect(r.bytesFetched).toBe(head(a) + head(b) + head(c) + a.length + b.length + c.length);
    expect(r).toMatchObject({ uidValidityChanged: false, more: false });
  });

  it('narrows on From (any case, display-name form) or a Subject substring, RFC 2047 decoded; other mail is skipped', async () => {
    const encoded = `=?UTF-8?B?${Buffer.from('Réponse [GROK:t-1] prête').toString('base64')}?=`;
    put('1.a', mail({ from: 'The Agent <AGENT@Agent.Example>' }), T0 + 1);
    put('2.b', mail({ from: 'someone@else.example', subject: encoded }), T0 + 2);
    put('3.c', mail({ from: 'someone@else.example', subject: 're: [grok:t-2] lower case tag' }), T0 + 3);
    put('4.d', mail({ from: 'friend@else.example', subject: 'dinner on friday?' }), T0 + 4);
    put('5.e', mail({ from: 'bank@else.example', subject: 'GROK without the bracket' }), T0 + 5);
    const box = new MaildirMailbox(dir);
    const r = await box.check(req());
    expect(r.messages.map((m) => uniqueOf(m.source))).toEqual(['1.a', '2.b', '3.c']);
    // With nothing to narrow on, nothing is read at all.
    const none = await box.check(req({ fromAddresses: [], subjectContains: [] }));
    expect(none.messages).toEqual([]);
    // Files skipped once are judged again when the narrowing changes (the skip cache is per narrowing).
    const other = await box.check(req({ fromAddresses: ['friend@else.example'], subjectContains: [] }));
    expect(other.messages.map((m) => uniqueOf(m.source))).toEqual(['4.d']);
  });

  it('never renames a file, moves it out of new/ or changes a flag or an mtime', async () => {
    put('1.a', mail({}), T0 + 1);
    put('2.b:2,', mail({}), T0 + 2, 'cur');
    put('3.c:2,FS', mail({ from: 'x@y.example' }), T0 + 3, 'cur');
    const before = snapshot();
    const r = await new MaildirMailbox(dir).check(req());
    expect(r.messages).toHaveLength(2);
    expect(snapshot()).toEqual(before);
    expect(readdirSync(join(dir, 'new'))).toEqual(['1.a']);
  });

  it('keeps the source key and uid of a message a MUA moves from new/ to cur/ and flags', async () => {
    const raw = mail({});
    put('42.M7P7Q7.host,S=99', raw, T0 + 5);
    const box = new MaildirMailbox(dir);
    const first = await box.check(req());
    expect(first.messages).toHaveLength(1);
    const { source, uid } = first.messages[0]!;
    renameSync(join(dir, 'new', '42.M7P7Q7.host,S=99'), join(dir, 'cur', '42.M7P7Q7.host,S=99:2,S'));
    const wm = { uidValidity: first.uidValidity, lastUid: uid };
    const again = await box.check(req({ watermark: wm }));
    expect(again.messages.map((m) => [m.source, m.uid, m.raw])).toEqual([[source, uid, raw]]);
    // …so the caller's isRecorded recognises it and it is not handed out twice.
    const recorded = await box.check(req({ watermark: wm, isRecorded: (s) => s === source }));
    expect(recorded.messages).toEqual([]);
  });

  it('hands out every file exactly once whatever its mtime: kept old mtimes, dates taken from headers, a forged future date', async () => {
    const box = new MaildirMailbox(dir);
    const recorded = new Set<string>();
    const asked: string[] = [];
    const check = async () => {
      const r = await box.check(req({ isRecorded: (s) => (asked.push(s), recorded.has(s)) }));
      for (const m of r.messages) recorded.add(m.source); // what the caller does: record each one
      return r.messages.map((m) => uniqueOf(m.source));
    };
    // A forged tagged mail dated far in the future is read first and carries nothing forward.
    put('1.forged', mail({ subject: '[GROK:x] forged' }), Date.UTC(2099, 0, 1));
    put('2.today', mail({ subject: 'today' }), T0);
    expect(await check()).toEqual(['2.today', '1.forged']);
    // Later deliveries whose mtime is older than anything seen: a rename that kept the mtime, a
    // sync tool setting mtime from the Date header (OfflineIMAP utime_from_header).
    put('3.renamed-in', mail({ subject: 'kept mtime' }), T0 - 86_400_000, 'cur');
    renameSync(join(dir, 'cur', '3.renamed-in'), join(dir, 'cur', '3.renamed-in:2,S'));
    put('4.from-date', mail({ subject: 'Date header' }), Date.UTC(2001, 8, 9));
    expect(await check()).toEqual(['4.from-date', '3.renamed-in']);
    // Nothing twice: what was handed out is asked about once more (it may not have been recorded)…
    asked.length = 0;
    expect(await check()).toEqual([]);
    expect(asked.map(uniqueOf).sort()).toEqual(['3.renamed-in', '4.from-date']);
    // …and a name known to be recorded is not asked about again.
    asked.length = 0;
    expect(await check()).toEqual([]);
    expect(asked).toEqual([]);
    // A MUA that moves and flags a recorded message does not make it new.
    renameSync(join(dir, 'new', '4.from-date'), join(dir, 'cur', '4.from-date:2,RS'));
    expect(await check()).toEqual([]);
  });

  it('opens a file once: a name whose header block did not match is not read again', async () => {
    const other = mail({ from: 'friend@else.example', subject: 'dinner' });
    put('1.other', other, T0);
    const box = new MaildirMailbox(dir);
    expect((await box.check(req())).messages).toEqual([]);
    // The same name now holding a matching message (Maildir files never change): not re-read.
    const tagged = mail({ subject: '[GROK:x] same size!' });
    expect(tagged.length).not.toBe(other.length);
    writeFileSync(join(dir, 'new', '1.other'), tagged);
    expect((await box.check(req())).messages).toEqual([]);
    // A fresh reader (a restart) reads it, once.
    expect((await new MaildirMailbox(dir).check(req())).messages.map((m) => uniqueOf(m.source))).toEqual(['1.other']);
  });

  it('lists the folder again only when a directory changed (its mtime moved)', async () => {
    const hourAgo = new Date(Date.now() - 3600_000);
    const age = () => ['new', 'cur'].forEach((sub) => utimesSync(join(dir, sub), hourAgo, hourAgo));
    put('1.first', mail({ subject: 'first' }), T0 + 1);
    age();
    const box = new MaildirMailbox(dir);
    expect((await box.check(req())).messages.map((m) => uniqueOf(m.source))).toEqual(['1.first']);
    // A file that lands while new/ keeps its old mtime (a change inside one timestamp tick) is not
    // listed: the directories look unchanged.
    put('2.second', mail({ subject: 'second' }), T0 + 2);
    age();
    expect((await box.check(req())).messages.map((m) => uniqueOf(m.source))).toEqual(['1.first']);
    // Any change moves the mtime: the next check lists again and finds both.
    put('3.third', mail({ subject: 'third' }), T0 + 3);
    expect((await box.check(req())).messages.map((m) => uniqueOf(m.source))).toEqual(['1.first', '2.second', '3.third']);
  });

  it('opens at most maxPrefixes files per check (four times as many found not ours), says more are waiting, and reaches a reply behind them', async () => {
    const maxPrefixes = 300;
    const n = 4 * maxPrefixes + 100;
    const other = mail({ from: 'friend@else.example', subject: 'old mail' });
    for (let i = 0; i < n; i++) put(`${String(i).padStart(5, '0')}.other`, other, T0 + i);
    put('99999.reply', mail({ subject: '[GROK:x] the reply' }), T0 + n);
    const box = new MaildirMailbox(dir);
    const first = await box.check(req({ maxPrefixes }));
    expect(first).toMatchObject({ messages: [], more: true });
    const second = await box.check(req({ maxPrefixes }));
    expect(second.messages.map((m) => uniqueOf(m.source))).toEqual(['99999.reply']);
    expect(second.more).toBe(false);
  });

  it('reads a header block that runs past STAMP_PREFIX_BYTES in two steps: its prefix, then (headerBlocks, at most maxHeaders a pass) the rest', async () => {
    const pad = `X-Pad: ${'p'.repeat(100)}\r\n`.repeat(400); // 43 KB of fields under From and Subject
    const big = (n: number): Buffer => Buffer.from(`From: ${AGENT}\r\nSubject: big ${n} [GROK:t]\r\n${pad}\r\nbody\r\n`);
    const late = Buffer.from(`${pad}From: ${AGENT}\r\nSubject: late [GROK:t]\r\n\r\nbody\r\n`); // the narrowing reads on for it
    [big(1), big(2), late].forEach((raw, i) => put(['1.big', '2.big', '3.late'][i]!, raw, T0 + i + 1));
    put('4.small', mail({ subject: 'small [GROK:t]' }), T0 + 4);
    const other = Buffer.from(`${pad}From: friend@else.example\r\nSubject: not ours\r\n\r\nbody\r\n`); put('5.other', other, T0 + 5);
    const pass = await new MaildirMailbox(dir).open(req({ maxHeaders: 3 }));
    const heads = await pass.headers();
    expect(heads.map((h) => [uniqueOf(h.source), h.prefixOnly ?? false, h.head.length])).toEqual([
      ['1.big', true, STAMP_PREFIX_BYTES],
      ['2.big', true, STAMP_PREFIX_BYTES],
      ['3.late', true, STAMP_PREFIX_BYTES],
      ['4.small', false, expect.any(Number)],
    ]);
    expect(heads[0]!.head.equals(big(1).subarray(0, STAMP_PREFIX_BYTES))).toBe(true);
    // Every byte read counts: four prefixes, 4.small's header block, 3.late's and 5.other's read on for the narrowing (2 of 3 maxHeaders).
    const smallHead = heads[3]!.head.length, blockOf = (raw: Buffer): number => raw.indexOf('\r\n\r\n') + 4;
    expect(pass.bytesFetched).toBe(4 * STAMP_PREFIX_BYTES + smallHead + blockOf(late) + blockOf(other));
    const before = pass.bytesFetched;
    const blocks = await pass.headerBlocks(heads.filter((h) => h.prefixOnly));
    // 3.late's block, read whole by the narrowing, is not read (nor counted) again.
    expect(blocks.map((h) => [uniqueOf(h.source), h.prefixOnly ?? false, h.head.toString('latin1').endsWith('\r\n\r\n')])).toEqual([
      ['1.big', false, true],
      ['3.late', false, true],
    ]);
    expect([blocks[1]!.head.equals(late.subarray(0, blockOf(late))), pass.bytesFetched - before]).toEqual([true, blockOf(big(1))]);
    expect(pass.more).toBe(true); // 2.big waits for the next pass: over maxHeaders
    await expect(pass.whole([heads[1]!])).rejects.toThrow(/headerBlocks/);
    expect((await pass.whole([blocks[0]!]))[0]!.raw.equals(big(1))).toBe(true);
  });

  it('skips files that vanish between the listing and the read, and follows one that moved to cur/', async () => {
    put('1.first', mail({}), T0 + 1);
    put('2.gone', mail({}), T0 + 2);
    const moved = mail({ subject: 'moved [GROK:t]' });
    put('3.moved', moved, T0 + 3);
    // isRecorded runs after the listing and before any read: a MUA acting right then.
    let acted = false;
    const r = await new MaildirMailbox(dir).check(req({
      isRecorded: () => {
        if (!acted) {
          acted = true;
          unlinkSync(join(dir, 'new', '2.gone'));
          renameSync(join(dir, 'new', '3.moved'), join(dir, 'cur', '3.moved:2,S'));
        }
        return false;
      },
    }));
    expect(r.messages.map((m) => uniqueOf(m.source))).toEqual(['1.first', '3.moved']);
    expect(r.messages[1]!.raw).toEqual(moved);
  });

  it('one bad entry never stops the check: a symlink, a FIFO and a directory are skipped, the mail around them read', async () => {
    put('1.before', mail({ subject: 'before' }), T0 + 1);
    symlinkSync('/etc/hostname', join(dir, 'new', '2.symlink'));
    execFileSync('mkfifo', [join(dir, 'new', '3.fifo')]);
    mkdirSync(join(dir, 'cur', '4.directory:2,S'));
    put('5.after', mail({ subject: 'after' }), T0 + 5);
    const box = new MaildirMailbox(dir);
    const r = await box.check(req());
    expect(r.messages.map((m) => uniqueOf(m.source))).toEqual(['1.before', '5.after']);
    expect(r.messages.every((m) => m.unreadable === undefined)).toBe(true);
    expect((await box.check(req({ isRecorded: (s) => r.messages.some((m) => m.source === s) }))).messages).toEqual([]);
  });

  it('reads a file whose name is not UTF-8 (the bytes kept exactly) and one whose name holds U+FFFD itself, each once', async () => {
    const latin = mail({ subject: 'latin [GROK:t]' });
    const replacement = mail({ subject: 'replacement [GROK:t]' });
    const bytesName = Buffer.concat([Buffer.from('1700000000.M1P1.host'), Buffer.from([0xff, 0xfe]), Buffer.from(',S=1586:2,S')]);
    const bytesPath = Buffer.concat([Buffer.from(`${join(dir, 'cur')}/`), bytesName]);
    writeFileSync(bytesPath, latin);
    utimesSync(bytesPath, new Date(T0 + 1), new Date(T0 + 1));
    put('1700000001.M2P2.host\uFFFD', replacement, T0 + 2);
    const box = new MaildirMailbox(dir);
    const r = await box.check(req());
    expect(r.messages.map((m) => uniqueOf(m.source))).toEqual([`/x${Buffer.from('1700000000.M1P1.host\xff\xfe,S=1586', 'latin1').toString('hex')}`, '1700000001.M2P2.host\uFFFD']);
    expect(r.messages.map((m) => m.raw)).toEqual([latin, replacement]);
    expect(r.messages.every((m) => m.unreadable === undefined)).toBe(true);
    expect((await box.check(req({ isRecorded: (s) => r.messages.some((m) => m.source === s) }))).messages).toEqual([]);
    // A new reader (a restart) keys it the same way.
    expect((await new MaildirMailbox(dir).check(req())).messages.map((m) => m.source)).toEqual(r.messages.map((m) => m.source));
  });

  it('a file that cannot be opened (EACCES) is handed out as unreadable: permission, and the others still are', { timeout: 30_000 }, () => {
    put('1.readable', mail({ subject: 'first' }), T0 + 1);
    chmodSync(put('2.private', mail({ subject: 'second' }), T0 + 2), 0o000);
    put('3.readable', mail({ subject: 'third' }), T0 + 3);
    const r = checkAsUser(dir, req());
    expect(r.messages.map((m) => [uniqueOf(m.source), m.unreadable?.reason ?? 'read'])).toEqual([
      ['1.readable', 'read'],
      ['2.private', 'permission'],
      ['3.readable', 'read'],
    ]);
    expect(r.messages[1]!.unreadable!.detail).toBe(`${join(dir, 'new', '2.private')}: EACCES`);
    expect(r.messages[1]!.raw.length).toBe(0);
    // Handed out once: recorded, it is not tried again.
    expect(checkAsUser(dir, { ...req(), recorded: r.messages.map((m) => m.source) }).messages).toEqual([]);
  });

  it('a file deleted between its header block and the whole read is handed out as unreadable: vanished, with that header block', async () => {
    const doomed = mail({ subject: '[GROK:x] deleted mid-read' });
    put('1.doomed', doomed, T0 + 1);
    put('2.moved', mail({ subject: 'moved mid-read' }), T0 + 2);
    put('3.kept', mail({ subject: 'kept' }), T0 + 3);
    const box = new MaildirMailbox(dir, {
      afterHeaderRead: (file) => {
        if (file.endsWith('1.doomed')) unlinkSync(file);
        if (file.endsWith('2.moved')) renameSync(file, join(dir, 'cur', '2.moved:2,S'));
      },
    });
    const r = await box.check(req());
    expect(r.messages.map((m) => [uniqueOf(m.source), m.unreadable?.reason ?? 'read'])).toEqual([
      ['1.doomed', 'vanished'],
      ['2.moved', 'read'],
      ['3.kept', 'read'],
    ]);
    expect(r.messages[0]!.raw.toString()).toBe(doomed.subarray(0, doomed.indexOf('\r\n\r\n') + 4).toString());
    expect(r.messages[0]!.unreadable!.detail).toMatch(/1\.doomed was deleted after its header block was read$/);
  });

  it('returns the header block only, flagged tooLarge, for a message over maxMessageBytes', async () => {
    const big = mail({ body: 'x'.repeat(5000) + '\r\n' });
    put('1.big', big, T0 + 1);
    put('2.small', mail({}), T0 + 2);
    const r = await new MaildirMailbox(dir).check(req({ maxMessageBytes: 2000 }));
    const [m1, m2] = r.messages;
    expect(m1).toMatchObject({ tooLarge: true, size: big.length });
    expect(m1!.raw.toString()).toBe(big.subarray(0, big.indexOf('\r\n\r\n') + 4).toString());
    expect(m2!.tooLarge).toBe(false);
    // The big one's header block once; the small one's header block, then the small one whole.
    expect(r.bytesFetched).toBe(m1!.raw.length + m2!.raw.indexOf('\r\n\r\n') + 4 + m2!.raw.length);
    expect(MAILDIR_HEADER_CAP_BYTES).toBeGreaterThanOrEqual(64 * 1024);
  });

  it('keeps the first maxFetch matches and says more are waiting', async () => {
    for (let i = 1; i <= 5; i++) put(`${i}.m`, mail({}), T0 + i);
    put('0.other', mail({ from: 'x@y.example' }), T0);
    const box = new MaildirMailbox(dir);
    const r = await box.check(req({ maxFetch: 2 }));
    expect(r.messages.map((m) => uniqueOf(m.source))).toEqual(['1.m', '2.m']);
    expect(r.more).toBe(true);
    const all = await box.check(req({ maxFetch: 5 }));
    expect(all.messages).toHaveLength(5);
    expect(all.more).toBe(false);
  });

  it('keeps UIDVALIDITY while the folder lives and changes it when the folder is replaced (rescan)', async () => {
    put('1.a', mail({}), T0 + 1);
    const box = new MaildirMailbox(dir);
    const first = await box.check(req());
    const second = await box.check(req({ watermark: { uidValidity: first.uidValidity, lastUid: T0 + 1 } }));
    expect(second.uidValidity).toBe(first.uidValidity);
    expect(second.uidValidityChanged).toBe(false);
    rmSync(dir, { recursive: true });
    for (const sub of ['new', 'cur', 'tmp']) mkdirSync(join(dir, sub), { recursive: true });
    put('0.restored', mail({}), T0 - 60_000); // older than the watermark: found only by the rescan
    const third = await box.check(req({ watermark: { uidValidity: first.uidValidity, lastUid: T0 + 1 } }));
    expect(third.uidValidity).not.toBe(first.uidValidity);
    expect(third.uidValidityChanged).toBe(true);
    expect(third.messages.map((m) => uniqueOf(m.source))).toEqual(['0.restored']);
  });

  it('throws MailboxError io for a missing folder or one that is not a Maildir', async () => {
    await expect(new MaildirMailbox(join(dir, 'nope')).check(req())).rejects.toMatchObject({ name: 'MailboxError', kind: 'io' });
    const empty = mkdtempSync(join(tmpdir(), 'mb-notmaildir-'));
    try {
      const err = await new MaildirMailbox(empty).check(req()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MailboxError);
      expect((err as MailboxError).message).toMatch(/not a Maildir/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

});

describe('deliverToMaildir', () => {
  it('writes through tmp/ into new/ with a Maildir name, exact bytes and mode 0600', async () => {
    const raw = mail({ subject: 'delivered' });
    const target = join(dir, 'fresh'); // created with tmp/, new/ and cur/
    const p1 = await deliverToMaildir(target, raw);
    const p2 = await deliverToMaildir(target, raw);
    const name = p1.slice(join(target, 'new').length + 1);
    expect(name).toMatch(new RegExp(`^\\d+\\.M\\d{6}P${process.pid}Q\\d+\\.[^/:]+,S=${raw.length}$`));
    expect(p2).not.toBe(p1);
    expect(readdirSync(join(target, 'tmp'))).toEqual([]);
    expect(readdirSync(join(target, 'cur'))).toEqual([]);
    expect(statSync(p1).mode & 0o777).toBe(0o600);
    expect(uniqueName(`${name}:2,S`)).toBe(name);
    const r = await new MaildirMailbox(target).check(req({ fromAddresses: [AGENT] }));
    expect(r.messages.map((m) => m.raw)).toEqual([raw, raw]);
    expect(r.messages.map((m) => m.source)).toEqual([p1, p2].map((p) => `maildir:${target}:${p.slice(p.lastIndexOf('/') + 1)}`));
  });
});

function uniqueOf(source: string): string {
  return source.slice(`maildir:${dir}:`.length);
}
