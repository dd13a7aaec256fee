import { describe, expect, it } from 'vitest';
import { fieldsNamed, headerCounts, headerPrefixFields, parseHeaderBlock, parseHeaders, parseSingleAddress, singleField, splitMessage } from '../../../src/uplink/raw-headers.js';

const crlf = (s: string): Buffer => Buffer.from(s.replace(/\r?\n/g, '\r\n'), 'utf8');

describe('splitMessage', () => {
  it('ends the header block at the first CRLF CRLF', () => {
    const raw = crlf('A: 1\nB: 2\n\nbody\n\nmore\n');
    const { header, bodyOffset } = splitMessage(raw);
    expect(header.toString()).toBe('A: 1\r\nB: 2\r\n');
    expect(raw.subarray(bodyOffset).toString()).toBe('body\r\n\r\nmore\r\n');
  });

  it('tolerates bare LF and mixed endings', () => {
    const raw = Buffer.from('A: 1\nB: 2\r\n\nbody');
    const { header, bodyOffset } = splitMessage(raw);
    expect(header.toString()).toBe('A: 1\nB: 2\r\n');
    expect(raw.subarray(bodyOffset).toString()).toBe('body');
    const lf = Buffer.from('A: 1\n\nbody');
    expect(lf.subarray(splitMessage(lf).bodyOffset).toString()).toBe('body');
  });

  it('treats a message without an empty line as all header', () => {
    const raw = Buffer.from('A: 1\r\nB: 2');
    expect(splitMessage(raw)).toEqual({ header: raw, bodyOffset: raw.length });
    expect(splitMessage(Buffer.alloc(0)).bodyOffset).toBe(0);
  });

  it('gives an empty header when the message starts with an empty line', () => {
    const raw = Buffer.from('\r\nA: 1\r\n');
    const { header, bodyOffset } = splitMessage(raw);
    expect(header.length).toBe(0);
    expect(bodyOffset).toBe(2);
  });

  it('does not take a whitespace-only line or a lone CR for the end of the header', () => {
    const raw = Buffer.from('A: 1\r\n \r\nB: 2\r\n\r\nbody');
    expect(splitMessage(raw).header.toString()).toBe('A: 1\r\n \r\nB: 2\r\n');
    const cr = Buffer.from('A: 1\r\rB: 2\r\n\r\nbody');
    expect(splitMessage(cr).header.toString()).toBe('A: 1\r\rB: 2\r\n');
  });
});

describe('parseHeaders', () => {
  it('keeps order and duplicates, topmost first', () => {
    const fields = parseHeaders(crlf('Received: from a by b\nFrom: x@y.test\nReceived: from c by d\nfrom: z@y.test\n\nFrom: body@y.test\n'));
    expect(fields.map((f) => [f.index, f.name, f.lname, f.value])).toEqual([
      [0, 'Received', 'received', 'from a by b'],
      [1, 'From', 'from', 'x@y.test'],
      [2, 'Received', 'received', 'from c by d'],
      [3, 'from', 'from', 'z@y.test'],
    ]);
  });

  it('unfolds continuation lines, keeping the whitespace (RFC 5322 §2.2.3)', () => {
    const [f] = parseHeaders(crlf('Subject: one\n two\n\tthree\nX: y\n\n'));
    expect(f?.value).toBe('one two\tthree');
    expect(f?.raw).toBe('Subject: one\r\n two\r\n\tthree');
  });

  it('unfolds bare-LF folding as well', () => {
    const [f] = parseHeaders(Buffer.from('Subject: a\n  b\n\nbody'));
    expect(f?.value).toBe('a  b');
  });

  it('trims only the whitespace after the colon', () => {
    const [f] = parseHeaders(Buffer.from('Subject:   \t spaced value  \r\n\r\n'));
    expect(f?.value).toBe('spaced value  ');
    const [empty] = parseHeaders(Buffer.from('Subject:\r\n\r\n'));
    expect(empty?.value).toBe('');
  });

  it('skips lines without a colon and their continuations, without throwing', () => {
    const fields = parseHeaders(crlf('garbage line\n continued: not a field\nA: 1\n: no name\n\n'));
    expect(fields.map((f) => f.name)).toEqual(['A']);
    expect(fields[0]?.index).toBe(0);
  });

  it('skips a leading continuation line and an mbox From_ line', () => {
    const fields = parseHeaders(crlf(' orphan: x\nFrom agent@x.test Mon Jan  1 00:00:00 2024\nA: 1\n\n'));
    expect(fields.map((f) => f.name)).toEqual(['A']);
  });

  it('accepts the obsolete `Name :` form so a `From :` counts as From (RFC 5322 §4.5.3)', () => {
    const fields = parseHeaders(crlf('From : evil@x.test\nFrom: agent@agent.example\n\n'));
    expect(fieldsNamed(fields, 'FROM').map((f) => f.value)).toEqual(['evil@x.test', 'agent@agent.example']);
  });

  it('decodes UTF-8 header bytes (RFC 6532) and falls back to latin1 per field', () => {
    const raw = Buffer.concat([Buffer.from('Subject: Grüße\r\n', 'utf8'), Buffer.from('X-Latin: caf\xe9\r\n\r\n', 'latin1')]);
    const fields = parseHeaders(raw);
    expect(fields[0]?.value).toBe('Grüße');
    expect(fields[1]?.value).toBe('café');
  });

  it('accepts a whole message or just the header block, and ignores the body', () => {
    const raw = crlf('A: 1\nB: 2\n\nC: 3\n');
    expect(parseHeaders(raw)).toEqual(parseHeaders(splitMessage(raw).header));
    expect(parseHeaders(raw)).toHaveLength(2);
  });

  it('never throws on arbitrary bytes', () => {
    let seed = 7;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    for (let n = 0; n < 200; n++) {
      const bytes = Buffer.from(Array.from({ length: Math.floor(rand() * 400) }, () => Math.floor(rand() * 256)));
      expect(() => parseHeaders(bytes)).not.toThrow();
      expect(() => splitMessage(bytes)).not.toThrow();
    }
  });
});

describe('headerPrefixFields: the fields of the first bytes of a longer header block', () => {
  const names = (prefix: string): string[] => headerPrefixFields(crlf(prefix)).map((f) => f.name);

  it('keeps only the fields certainly whole: the last one when the prefix shows a new field begin after it', () => {
    expect(names('From: a\nSubject: s\nX-Pad: aaa')).toEqual(['From', 'Subject']);
    // Cut at a line break, or with the next line a continuation: the last field may go on.
    expect(names('From: a\nSubject: s\n')).toEqual(['From']);
    expect(names('From: a\nSubject: s\n continued')).toEqual(['From']);
    expect(names('From: a\nSubject: s\n\tcontinued')).toEqual(['From']);
    expect(names('From: a')).toEqual([]);
  });
});

describe('fieldsNamed, headerCounts, singleField', () => {
  const fields = parseHeaders(crlf('From: a@x.test\nSubject: s\nfrom: b@x.test\nDate: d\n\n'));

  it('finds fields case-insensitively', () => {
    expect(fieldsNamed(fields, 'From')).toHaveLength(2);
    expect(fieldsNamed(fields, 'message-id')).toEqual([]);
  });

  it('counts by lower-cased name', () => {
    expect(Object.fromEntries(headerCounts(fields))).toEqual({ from: 2, subject: 1, date: 1 });
  });

  it('returns the field only when it appears exactly once', () => {
    expect(singleField(fields, 'subject')?.value).toBe('s');
    expect(singleField(fields, 'from')).toBeNull();
    expect(singleField(fields, 'message-id')).toBeNull();
  });
});

describe('parseSingleAddress', () => {
  it.each([
    ['Agent <Agent@Agent.Example>', 'agent@agent.example'],
    ['agent@agent.example', 'agent@agent.example'],
    ['"Agent, the bot" <agent@agent.example>', 'agent@agent.example'],
    ['"evil@x.test" <agent@agent.example>', 'agent@agent.example'],
    ['=?UTF-8?B?QWdlbnQ=?= <agent@agent.example>', 'agent@agent.example'],
    ['agent@agent.example (the agent)', 'agent@agent.example'],
    ['team: agent@agent.example;', 'agent@agent.example'],
  ])('reads %s', (value, address) => {
    expect(parseSingleAddress(value)).toEqual({ address });
  });

  it.each([
    ['', 'none'],
    ['   ', 'none'],
    ['Undisclosed recipients:;', 'none'],
    ['a@x.test, b@x.test', 'several'],
    ['a@x.test; b@x.test', 'several'],
    ['team: a@x.test, b@x.test;', 'several'],
    ['garbage', 'invalid'],
    ['<>', 'invalid'],
    ['<agent@agent.example> <evil@x.test>', 'invalid'],
    ['agent@agent.example evil@x.test', 'invalid'],
    ['a@b@c.test', 'invalid'],
    ['@x.test', 'invalid'],
    ['agent@', 'invalid'],
    ['"a b"@x.test', 'invalid'],
    ['a..b@x.test', 'invalid'],
    ['a@x.test.', 'invalid'],
  ])('refuses %j as %s', (value, problem) => {
    expect(parseSingleAddress(value)).toEqual({ problem });
  });

  it('takes the angle address over a display name that looks like an address', () => {
    expect(parseSingleAddress('agent@agent.example <evil@x.test>')).toEqual({ address: 'evil@x.test' });
  });
});

describe('parseHeaderBlock on hostile sizes', () => {
  // Linear: each takes well under a second on 2 MB; the test's own timeout is the guard (a field
  // name padded with spaces before an inner character took 10 minutes on 0.5 MB).
  const MB2 = 2 * 1024 * 1024;
  it('a field name with a long run of spaces before an inner character is one malformed line', () => {
    expect(parseHeaderBlock(Buffer.from(`X${' '.repeat(MB2)}y: v\r\nSubject: s\r\n\r\n`))).toMatchObject({ malformedLines: 1, fields: [{ name: 'Subject', value: 's' }] });
  });
  it('"Name :" with a long run of spaces and tabs before the colon is still that field', () => {
    expect(parseHeaderBlock(Buffer.from(`From${' \t'.repeat(MB2 / 2)}: a@b.example\r\n\r\n`)).fields).toMatchObject([{ name: 'From', value: 'a@b.example' }]);
  });
  it('many short fields and many continuation lines', () => {
    expect(parseHeaderBlock(Buffer.from(`${'X-A: b\r\n'.repeat(MB2 / 8)}\r\n`)).fields).toHaveLength(MB2 / 8);
    expect(parseHeaderBlock(Buffer.from(`X-A: v\r\n${' c\r\n'.repeat(MB2 / 4)}\r\n`)).fields[0]!.value).toHaveLength(1 + 2 * (MB2 / 4));
  });
});
