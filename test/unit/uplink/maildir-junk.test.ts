/**
 * Untagged Maildir mail ("not ours": no agent's From, no tag) is cheap and leaves a trace
 * (docs/architecture.md, "The header stage"): decided on its first 16 KiB when they hold its first
 * From and Subject whole, a quarter of a prefix against `maxPrefixes`, and kept in the store so a
 * restart does not open it again. Files that share a unique name each get a verdict.
 * Counted in files opened and bytes read, never in time.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store } from '../../../src/store/store.js';
import { poolCalls } from '../../../src/uplink/fs-calls.js';
import { STAMP_PREFIX_BYTES } from '../../../src/uplink/gates.js';
import type { NotOursRecord } from '../../../src/uplink/mailbox.js';
import { MaildirMailbox } from '../../../src/uplink/maildir-mailbox.js';
import { SLICE_BYTES } from '../../../src/uplink/maildir-sync-reads.js';
import { CHECK_AGENT, checkRequest } from '../../helpers/check-request.js';

const T0 = Date.UTC(2025, 0, 1);
let dir: string;
let store: Store;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'mb-junk-'));
  for (const sub of ['new', 'cur', 'tmp']) mkdirSync(join(dir, sub));
  store = Store.open(join(dir, 'bridge.db'));
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const put = (sub: 'new' | 'cur', name: string, raw: string, at: number): void => {
  const p = join(dir, sub, name);
  writeFileSync(p, raw);
  utimesSync(p, new Date(at), new Date(at));
};
/** Untagged mail whose header block runs past 16 KiB (17,000 bytes of padding below its From and Subject). */
const junk = (i: number): string => `From: news@other.example\r\nSubject: weekly ${i}\r\nX-Pad: ${'j'.repeat(17_000)}\r\n\r\nhi\r\n`;
const reply = (body: string): string => `From: Agent <${CHECK_AGENT}>\r\nSubject: Re: [GROK:t1]\r\nMessage-ID: <${body}@agent.example>\r\n\r\nstatus: done\r\n${body}\r\n`;
/** The store's record of names not ours, as the check wires it (core/mail-check.ts). */
const record = (): NotOursRecord => ({
  load: (key) => store.mailbox.notOurs(dir, key),
  save: (key, add, drop) => store.tx((tx) => tx.mailbox.saveNotOurs(dir, key, add, drop)),
});

async function handOut(box: MaildirMailbox, over: Parameters<typeof checkRequest>[0] = {}) {
  const pass = await box.open(checkRequest({ notOurs: record(), ...over }));
  const names: string[] = [];
  for (let b = await pass.headers(); b.length > 0; b = await pass.headers()) names.push(...b.map((h) => h.source.slice(`maildir:${dir}:`.length)));
  return { pass, names };
}

describe('untagged Maildir mail', () => {
  it('hands out a reply behind 1,200 untagged files with 17 KB headers on the first pass, reading none of them on, and not one again after a restart', { timeout: 30_000 }, async () => {
    const n = 1_200;
    for (let i = 0; i < n; i++) put('new', `${1000 + i}.junk${i}`, junk(i), T0 + i);
    put('new', '9999.reply', reply('r'), T0 + n);
    const first = await handOut(new MaildirMailbox(dir), { maxPrefixes: 400, maxHeaders: 100 });
    expect(first.names).toEqual(['9999.reply']);
    expect([first.pass.more, first.pass.filesOpened, first.pass.notOurs]).toEqual([false, n + 1, n]);
    expect(first.pass.bytesFetched).toBe(n * STAMP_PREFIX_BYTES + reply('r').indexOf('\r\n\r\n') + 4);
    expect(store.mailbox.notOursCount(dir)).toBe(n);
    // A restart: a new reader, the same store. Only the reply (not recorded: no ledger here) is opened.
    const again = await handOut(new MaildirMailbox(dir), { maxPrefixes: 400, maxHeaders: 100 });
    expect(again.names).toEqual(['9999.reply']);
    expect([again.pass.filesOpened, again.pass.notOurs]).toEqual([1, 0]);
  });

  it('decides untagged files on the main thread: no thread-pool round trip per file, the event loop turning between slices, the reply handed out by the first pass with the shipping budget', { timeout: 30_000 }, async () => {
    const n = 1_200;
    for (let i = 0; i < n; i++) put('new', `${1000 + i}.junk${i}`, junk(i), T0 + i);
    put('new', '9999.reply', reply('r'), T0 + n);
    const box = new MaildirMailbox(dir);
    const calls = poolCalls();
    let turns = 0;
    let spinning = true;
    const spin = (): void => {
      turns++;
      if (spinning) setImmediate(spin);
    };
    setImmediate(spin);
    const first = await handOut(box);
    spinning = false;
    expect(first.names).toEqual(['9999.reply']);
    expect([first.pass.more, first.pass.filesOpened, first.pass.notOurs]).toEqual([false, n + 1, n]);
    // The folder's stat, the directories' stats and listings: a handful whatever n (was 5 a file:
    // lstat, open, fstat, read, close on libuv's thread pool).
    expect(poolCalls() - calls).toBeLessThan(10);
    // 16 KiB read of each file: at most SLICE_BYTES between two turns of the event loop.
    expect(turns).toBeGreaterThanOrEqual(Math.floor((n * STAMP_PREFIX_BYTES) / SLICE_BYTES));
  });

  it('a symlink or FIFO swapped in after the listing is skipped, never followed or waited on; a file deleted is dropped', async () => {
    const elsewhere = join(dir, 'elsewhere');
    writeFileSync(elsewhere, reply('outside'));
    ['1.reply', '2.link', '3.fifo', '4.gone', '5.reply'].forEach((name, i) => put('new', name, reply(name.slice(2)), T0 + i));
    const pass = await new MaildirMailbox(dir).open(checkRequest({ notOurs: record() }));
    // After the listing and the lstat that ordered them, before their first read.
    unlinkSync(join(dir, 'new', '2.link'));
    symlinkSync(elsewhere, join(dir, 'new', '2.link'));
    unlinkSync(join(dir, 'new', '3.fifo'));
    execFileSync('mkfifo', [join(dir, 'new', '3.fifo')]);
    unlinkSync(join(dir, 'new', '4.gone'));
    const heads = await pass.headers();
    expect(heads.map((h) => [h.source.slice(`maildir:${dir}:`.length), h.unreadable ?? null])).toEqual([
      ['1.reply', null],
      ['5.reply', null],
    ]);
    expect(await pass.headers()).toEqual([]);
    expect(pass.more).toBe(false);
  });

  it('forgets the record when the narrowing changes, and drops names of files deleted since', async () => {
    for (let i = 0; i < 3; i++) put('new', `${1000 + i}.junk${i}`, junk(i), T0 + i);
    await handOut(new MaildirMailbox(dir));
    rmSync(join(dir, 'new', '1000.junk0'));
    const after = await handOut(new MaildirMailbox(dir));
    expect([after.pass.filesOpened, store.mailbox.notOursCount(dir)]).toEqual([0, 2]);
    const other = await handOut(new MaildirMailbox(dir), { subjectContains: ['[OTHER:'] });
    expect(other.pass.filesOpened).toBe(2);
  });
});

describe('files sharing a unique name', () => {
  it('hands out each different file: X:2, in new/ and X:2,S in cur/, Y and Y:2,T in new/ are four messages', async () => {
    put('new', '1700000000.same.host:2,', reply('first'), T0);
    put('cur', '1700000000.same.host:2,S', reply('second'), T0 + 1);
    put('new', '1700000001.other.host', reply('third'), T0 + 2);
    put('new', '1700000001.other.host:2,T', reply('fourth'), T0 + 3);
    const box = new MaildirMailbox(dir);
    const pass = await box.open(checkRequest());
    const heads = await pass.headers();
    expect(heads).toHaveLength(4);
    expect(new Set(heads.map((h) => h.source)).size).toBe(4);
    expect(heads.map((h) => /Message-ID: <(\w+)@/.exec(h.head.toString())![1]).sort()).toEqual(['first', 'fourth', 'second', 'third']);
    // The same sources on the next reader (a restart): the keys are stable.
    const again = await new MaildirMailbox(dir).open(checkRequest());
    expect((await again.headers()).map((h) => h.source).sort()).toEqual(heads.map((h) => h.source).sort());
  });
});
