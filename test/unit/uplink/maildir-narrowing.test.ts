/**
 * The Maildir narrowing's work is bounded per candidate (docs/architecture.md, "The header stage"):
 * counted in fields examined, values decoded and bytes read, never in time. A forger's header
 * block of 250 KB of encoded Subjects cost 54 ms a mail and was read to 256 KiB.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { STAMP_PREFIX_BYTES } from '../../../src/uplink/gates.js';
import { MaildirMailbox } from '../../../src/uplink/maildir-mailbox.js';
import { CHECK_AGENT, checkRequest } from '../../helpers/check-request.js';
import { matches, NARROWING_MAX_FIELDS, NARROWING_READ_BYTES, type NarrowingWork } from '../../../src/uplink/maildir-narrowing.js';

const AGENT = CHECK_AGENT;
const req = checkRequest;
const fill = (unit: string, bytes: number): string => unit.repeat(Math.ceil(bytes / unit.length)).slice(0, bytes);
const SOUP = 'Subject: =?utf-8?Q?=5BGROX?= =?iso-8859-1?B?Og==?= =?koi8-r?Q?x?= =?shift_jis?B?eA==?=\r\n';
const work = (): NarrowingWork => ({ fields: 0, decoded: 0 });

describe('matches', () => {
  it('examines at most NARROWING_MAX_FIELDS From and Subject fields, and hands out a block with more (gate 3 refuses it)', () => {
    const w = work();
    expect(matches(Buffer.from(`From: news@other.example\r\n${fill(SOUP, 250_000)}`, 'latin1'), req(), w)).toBe(true);
    expect(w.fields).toBe(NARROWING_MAX_FIELDS);
    expect(w.decoded).toBeLessThanOrEqual(NARROWING_MAX_FIELDS);
  });

  it('decodes only values holding =?, and stops at the first match', () => {
    const plain = work();
    expect(matches(Buffer.from(`From: news@other.example\r\nSubject: weekly\r\n${fill('X:a\r\n', 60_000)}`), req(), plain)).toBe(false);
    expect(plain).toEqual({ fields: 2, decoded: 0 });
    const first = work();
    expect(matches(Buffer.from(`From: Agent <${AGENT.toUpperCase()}>\r\nSubject: =?utf-8?Q?x?=\r\nSubject: =?utf-8?Q?y?=\r\n`), req(), first)).toBe(true);
    expect(first).toEqual({ fields: 1, decoded: 0 });
  });

  it('keeps the IMAP SEARCH reading: encoded and folded values, names spaced before the colon, bare CR line ends', () => {
    const yes = (s: string): boolean => matches(Buffer.from(s), req());
    expect(yes('Subject: =?utf-8?Q?Re=3A_=5BGROK=3At1=5D?=\r\n')).toBe(true);
    expect(yes('Subject: Re:\r\n [GROK:t1]\r\n')).toBe(true);
    expect(yes(`FROM  : x <${AGENT}>\r\n`)).toBe(true);
    expect(yes(`Subject: ${'=?utf-8?Q?a?= '.repeat(400)}\r\n`)).toBe(true); // over NARROWING_DECODE_BYTES: handed out undecoded
    expect(yes(`X-Old: a\rFrom: ${AGENT}\r`)).toBe(true);
    expect(yes(`X-From: ${AGENT}\r\nFrom-Like: ${AGENT}\r\n`)).toBe(false);
  });
});

describe('MaildirMailbox narrowing', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'mb-narrow-'));
    for (const sub of ['new', 'cur', 'tmp']) mkdirSync(join(dir, sub));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const put = (name: string, raw: string, at: number): void => {
    const p = join(dir, 'new', name);
    writeFileSync(p, raw, 'latin1');
    utimesSync(p, new Date(at), new Date(at));
  };
  const T0 = Date.UTC(2025, 0, 1);

  it('reads on at most NARROWING_READ_BYTES for a header block that runs on, hands out one longer than that on its prefix, and counts every byte read', async () => {
    put('1.big', `From: news@other.example\r\n${'X-Pad: pppppppppp\r\n'.repeat(13_000)}Subject: weekly\r\n\r\nhello\r\n`, T0 + 1);
    const pass = await new MaildirMailbox(dir).open(req());
    const heads = await pass.headers();
    expect(heads.map((h) => [h.prefixOnly, h.head.length])).toEqual([[true, STAMP_PREFIX_BYTES]]);
    expect(pass.bytesFetched).toBe(STAMP_PREFIX_BYTES + NARROWING_READ_BYTES);
  });

  it('counts the narrowing reading on against maxHeaders: the rest wait for the next pass', async () => {
    // No Subject within the first 16 KiB: the narrowing reads on for it.
    const miss = `From: news@other.example\r\n${'X-Pad: pppppppppp\r\n'.repeat(1000)}Subject: weekly\r\n\r\nhello\r\n`;
    for (let i = 1; i <= 3; i++) put(`${i}.miss`, miss, T0 + i);
    const box = new MaildirMailbox(dir);
    const first = await box.open(req({ maxHeaders: 2 }));
    expect(await first.headers()).toEqual([]);
    expect(first.more).toBe(true);
    const block = miss.indexOf('\r\n\r\n') + 4;
    expect(first.bytesFetched).toBe(3 * STAMP_PREFIX_BYTES + 2 * block);
    const second = await box.open(req({ maxHeaders: 2 }));
    expect(await second.headers()).toEqual([]);
    expect([second.more, second.bytesFetched]).toEqual([false, STAMP_PREFIX_BYTES + block]);
  });
});
