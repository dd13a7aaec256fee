import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { describe, expect, it } from 'vitest';
import { singleField, parseHeaders } from '../../../src/uplink/raw-headers.js';
import { decodeSubject, findTaskTags } from '../../../src/uplink/subject-tag.js';

const ID = '0b7c2f7e-3f8e-4b8a-9a51-0d6b2a8f1c11';
const b64 = (bytes: Buffer): string => bytes.toString('base64');
const q = (bytes: Buffer): string => [...bytes].map((x) => `=${x.toString(16).toUpperCase().padStart(2, '0')}`).join('');

describe('decodeSubject', () => {
  it('leaves plain text alone', () => {
    expect(decodeSubject(`Re: done [GROK:${ID}]`)).toBe(`Re: done [GROK:${ID}]`);
    expect(decodeSubject('')).toBe('');
  });

  it('joins a UTF-8 character split across two B words (mailparser PR #89)', () => {
    const bytes = Buffer.from('Grüße 😀 done', 'utf8');
    for (let cut = 1; cut < bytes.length; cut++) {
      const subject = `=?UTF-8?B?${b64(bytes.subarray(0, cut))}?= =?UTF-8?B?${b64(bytes.subarray(cut))}?=`;
      expect(decodeSubject(subject)).toBe('Grüße 😀 done');
    }
  });

  it('joins a character split across a Q word and a B word, either way round', () => {
    const emoji = Buffer.from('😀', 'utf8');
    expect(decodeSubject(`=?UTF-8?Q?a${q(emoji.subarray(0, 2))}?= =?UTF-8?B?${b64(emoji.subarray(2))}?=b`)).toBe('a😀b');
    expect(decodeSubject(`=?utf-8?b?${b64(emoji.subarray(0, 1))}?=\t=?utf-8?q?${q(emoji.subarray(1))}_x?=`)).toBe('😀 x');
  });

  it('drops the whitespace and folding between encoded words, keeps it next to text (RFC 2047 §6.2)', () => {
    expect(decodeSubject('=?UTF-8?Q?a?=   =?UTF-8?Q?b?= c')).toBe('ab c');
    expect(decodeSubject('Re: =?UTF-8?Q?a?=\r\n =?UTF-8?Q?b?=\r\n tail')).toBe('Re: ab tail');
    expect(decodeSubject('x =?UTF-8?Q?a?= y =?UTF-8?Q?b?=')).toBe('x a y b');
  });

  it('decodes adjacent words in different charsets separately', () => {
    expect(decodeSubject('=?ISO-8859-1?Q?Gr=FC=DFe?= =?UTF-8?B?IOKckw==?=')).toBe('Grüße ✓');
    expect(decodeSubject('=?KOI8-R?B?8NLJ18XU?=')).toBe('Привет');
    expect(decodeSubject('=?windows-1252?Q?=80_5?=')).toBe('€ 5');
  });

  it('reads Q underscores, lower-case markers and an RFC 2231 language suffix', () => {
    expect(decodeSubject('=?utf-8*en?q?hello_world?=')).toBe('hello world');
  });

  it('survives bad input without throwing', () => {
    expect(decodeSubject('=?bogus-charset?Q?abc?=')).toBe('abc');
    expect(decodeSubject('=?UTF-8?B?!!!?=')).toBe('');
    expect(decodeSubject('=?UTF-8?Q?=ZZ=4?=')).toBe('=ZZ=4');
    expect(decodeSubject('=?UTF-8?X?abc?= =?')).toBe('=?UTF-8?X?abc?= =?');
    expect(decodeSubject(null as unknown as string)).toBe('');
    expect(decodeSubject(`=?UTF-8?B?${b64(Buffer.from([0xff, 0xfe]))}?=`)).toBe('\ufffd\ufffd');
  });

  it('round-trips long non-ASCII subjects as nodemailer encodes them', async () => {
    const subject = `Re: ${'Überprüfung der Ergebnisse 😀 '.repeat(6)}[GROK:${ID}]`;
    const raw = await new Promise<Buffer>((resolve, reject) =>
      new MailComposer({ from: 'a@agent.example', to: 'b@example.com', subject, text: 'x' }).compile().build((err, msg) => (err ? reject(err) : resolve(msg))),
    );
    const field = singleField(parseHeaders(raw), 'subject')!;
    expect(field.raw).toMatch(/=\?UTF-8\?[BQ]\?/);
    expect(decodeSubject(field.value)).toBe(subject);
    expect(findTaskTags(decodeSubject(field.value))).toEqual([{ tag: 'GROK', taskId: ID }]);
  });
});

describe('findTaskTags', () => {
  it.each([
    [`[GROK:${ID}]`],
    [`Re: [GROK:${ID}]`],
    [`Fwd: RE: AW: Antwort [GROK:${ID}] done`],
    [`Re:[grok:${ID.toUpperCase()}]`],
  ])('finds the tag in %s, tag upper-cased and id lower-cased', (subject) => {
    expect(findTaskTags(subject)).toEqual([{ tag: 'GROK', taskId: ID }]);
  });

  it('returns distinct pairs in order', () => {
    const other = 'ffffffff-ffff-4fff-8fff-ffffffffffff';
    expect(findTaskTags(`[GROK:${ID}] [grok:${ID.toUpperCase()}] [CLAUDE-2:${other}] [GROK:${other}]`)).toEqual([
      { tag: 'GROK', taskId: ID },
      { tag: 'CLAUDE-2', taskId: other },
      { tag: 'GROK', taskId: other },
    ]);
  });

  it('finds the inner tag of doubled brackets', () => {
    expect(findTaskTags(`[[GROK:${ID}]]`)).toEqual([{ tag: 'GROK', taskId: ID }]);
  });

  it.each([
    ['no brackets', `GROK:${ID}`],
    ['spaces', `[GROK : ${ID}]`],
    ['a short id', '[GROK:0b7c2f7e-3f8e-4b8a-9a51-0d6b2a8f1c1]'],
    ['a long id', `[GROK:${ID}0]`],
    ['a non-hex id', '[GROK:0b7c2f7e-3f8e-4b8a-9a51-0d6b2a8f1c1g]'],
    ['a tag starting with "-"', `[-GROK:${ID}]`],
    ['a 33-character tag', `[${'A'.repeat(33)}:${ID}]`],
    ['an empty tag', `[:${ID}]`],
    ['an id without dashes', '[GROK:0b7c2f7e3f8e4b8a9a510d6b2a8f1c11]'],
  ])('finds nothing with %s', (_name, subject) => {
    expect(findTaskTags(subject)).toEqual([]);
  });

  it('accepts a 32-character tag with "_" and "-"', () => {
    const tag = `A${'_-'.repeat(15)}Z`;
    expect(findTaskTags(`[${tag}:${ID}]`)).toEqual([{ tag: tag.toUpperCase(), taskId: ID }]);
  });
});
