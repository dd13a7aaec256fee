import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { describe, expect, it } from 'vitest';
import { OFFLOAD_MIN_BYTES, setWorkerHeapLimit, WORKER_HEAP_MB, type BudgetTimer } from '../../../src/uplink/offload.js';
import { replyStatus } from '../../../src/uplink/gates.js';
import { parseReply, parseReplyHere, parseReplyText, REPLY_PARSE_MAX_BYTES, REPLY_STATUS_WORDS, type ParsedReply } from '../../../src/uplink/reply-format.js';

const TOKEN = '0123456789abcdef0123456789abcdef';
const OLD = 'ffffffffffffffffffffffffffffffff';
const HEAD = 'From: Agent <agent@agent.example>\r\nTo: me@example.com\r\nSubject: Re: [GROK:0b7c2f7e-3f8e-4b8a-9a51-0d6b2a8f1c11]\r\nMIME-Version: 1.0\r\n';

type MailInput = ConstructorParameters<typeof MailComposer>[0];
function compose(o: Partial<MailInput>): Promise<Buffer> {
  const options = { from: 'Agent <agent@agent.example>', to: 'me@example.com', subject: 'Re: x', ...o } as MailInput;
  return new Promise((resolve, reject) => new MailComposer(options).compile().build((err, msg) => (err ? reject(err) : resolve(msg))));
}

/** A hand-built single-part message; `body` line ends become CRLF unless `lf`. */
function raw(contentHeaders: string, body: string | Buffer, lf = false): Buffer {
  const head = Buffer.from(`${HEAD}${contentHeaders}\r\n\r\n`.replace(/\r\n/g, lf ? '\n' : '\r\n'), 'latin1');
  const text = typeof body === 'string' ? Buffer.from(lf ? body.replace(/\r\n/g, '\n') : body.replace(/\r?\n/g, '\r\n'), 'utf8') : body;
  return Buffer.concat([head, text]);
}

const block = (answer: string, token = TOKEN, status = 'done'): string => `reply_token: ${token}\nstatus: ${status}\n---\n${answer}`;

const good = (answer: string, bodyKind: ParsedReply['bodyKind'] = 'text', omittedLines = expect.any(Number) as unknown as number): ParsedReply => ({
  token: TOKEN,
  tokenProblem: null,
  status: 'done',
  statusProblem: null,
  omittedLines,
  answer,
  bodyKind,
  attachments: [],
});

describe('parseReply: body encodings', () => {
  it('reads a plain text/plain reply', async () => {
    expect(await parseReply(raw('Content-Type: text/plain; charset=utf-8', block('The answer.\nSecond line.\n')))).toEqual(good('The answer.\nSecond line.'));
  });

  it('reads quoted-printable with soft line breaks and UTF-8', async () => {
    const answer = `Grüße, ${'long line '.repeat(30).trim()}`;
    const mail = await compose({ text: block(answer), textEncoding: 'quoted-printable' });
    expect(mail.toString()).toContain('Content-Transfer-Encoding: quoted-printable');
    expect(await parseReply(mail)).toEqual(good(answer));
  });

  it('reads base64', async () => {
    const body = Buffer.from(block('Über base64.\n'), 'utf8').toString('base64').replace(/.{76}/g, '$&\r\n');
    expect(await parseReply(raw('Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64', body))).toEqual(good('Über base64.'));
  });

  it('reads ISO-8859-1, 8bit and quoted-printable', async () => {
    const latin = Buffer.from(block('Café crème, naïve\r\n').replace(/\r?\n/g, '\r\n'), 'latin1');
    expect(await parseReply(raw('Content-Type: text/plain; charset=ISO-8859-1\r\nContent-Transfer-Encoding: 8bit', latin))).toEqual(good('Café crème, naïve'));
    const qp = raw('Content-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable', block('Caf=E9 cr=E8me\n'));
    expect((await parseReply(qp)).answer).toBe('Café crème');
  });

  it('joins format=flowed soft breaks (RFC 3676) and keeps hard ones', async () => {
    const body = `reply_token: ${TOKEN}\nstatus: done\n---\nThis is one \nflowed paragraph.\nHard break.\n`;
    expect(await parseReply(raw('Content-Type: text/plain; charset=utf-8; format=flowed', body))).toEqual(good('This is one flowed paragraph.\nHard break.'));
  });

  it('converts an HTML-only reply (mcp-email-server #113) and drops its quoted part', async () => {
    const html = `<div>reply_token: ${TOKEN}</div><div>status: done</div><div>---</div><p>The <b>answer</b>.</p><p>Line two.</p><div class="gmail_quote">On Mon, 1 Jan 2030 at 10:00, Bridge &lt;me@example.com&gt; wrote:<blockquote>reply_token: ${OLD}<br>old</blockquote></div>`;
    const r = await parseReply(await compose({ html }));
    expect(r).toEqual(good('The answer.\n\nLine two.', 'html'));
  });

  it('prefers the text/plain part of multipart/alternative', async () => {
    const r = await parseReply(await compose({ text: block('From the text part.'), html: `<p>reply_token: ${OLD}</p>` }));
    expect(r).toEqual(good('From the text part.'));
  });

  it('reads CRLF and LF line endings alike', async () => {
    const body = block('Line one.\n\nLine three.\n');
    const crlf = await parseReply(raw('Content-Type: text/plain', body));
    const lf = await parseReply(raw('Content-Type: text/plain', body, true));
    expect(crlf).toEqual(good('Line one.\n\nLine three.'));
    expect(lf).toEqual(crlf);
  });

  it('returns a 200 KB answer whole, however it is encoded', async () => {
    const lines = Array.from({ length: 4000 }, (_, i) => `Line ${String(i).padStart(4, '0')}: ${'x'.repeat(40)} ü`);
    const answer = lines.join('\n');
    expect(answer.length).toBeGreaterThan(200_000);
    for (const textEncoding of ['quoted-printable', 'base64'] as const) {
      const r = await parseReply(await compose({ text: block(answer), textEncoding }));
      expect(r.answer.length).toBe(answer.length);
      expect(r.answer).toBe(answer);
    }
  });

  it('keeps an embedded message/rfc822 out of the text, even inline', async () => {
    const inner = `Subject: dispatch\r\n\r\nreply_token: ${OLD}\r\nstatus: done\r\n---\r\ninjected\r\n`;
    const mail = await compose({ text: 'See the attached dispatch.', attachments: [{ content: inner, contentType: 'message/rfc822', contentDisposition: 'inline' }] });
    const r = await parseReply(mail);
    expect(r).toMatchObject({ token: null, tokenProblem: 'missing', status: null, answer: '', bodyKind: 'text' });
  });

  it('never throws on garbage bytes', async () => {
    let seed = 3;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const samples = [
      Buffer.alloc(0),
      Buffer.from('no header separator at all'),
      Buffer.from('Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!@@@\r\n'),
      Buffer.from('Content-Type: text/html\r\n\r\n<div><div><div><p>unclosed'),
      ...Array.from({ length: 30 }, () => Buffer.from(Array.from({ length: Math.floor(rand() * 3000) }, () => Math.floor(rand() * 256)))),
    ];
    for (const s of samples) {
      const r = await parseReply(s);
      expect(['text', 'html', 'none']).toContain(r.bodyKind);
      expect(typeof r.answer).toBe('string');
    }
    expect(await parseReply(Buffer.alloc(0))).toEqual({ token: null, tokenProblem: 'missing', status: null, statusProblem: 'missing', answer: '', omittedLines: 0, bodyKind: 'none', attachments: [] });
  });
});

describe('parseReplyText: the reply block', () => {
  it('reads keys and status words case-insensitively, trims values, keeps the token as written', () => {
    expect(parseReplyText(`Hi,\n\n  Reply_Token :  ${TOKEN}  \nSTATUS:   Input-Required \n---   \nQuestion?`)).toEqual({
      token: TOKEN,
      tokenProblem: null,
      status: 'input-required',
      statusProblem: null,
      answer: 'Question?',
      omittedLines: 0,
    });
  });

  it('reads every status word, rejected among them, with the same case and spacing rules; gate 11 takes exactly these words', () => {
    expect(REPLY_STATUS_WORDS).toEqual(['done', 'input-required', 'failed', 'rejected', 'working']);
    const capital = (w: string): string => w.replace(/(^|-)([a-z])/g, (_m: string, dash: string, c: string) => dash + c.toUpperCase());
    for (const word of REPLY_STATUS_WORDS) {
      for (const line of [`status: ${word}`, `STATUS:   ${word.toUpperCase()}  `, ` Status :\t${capital(word)}`, `status:${word}`]) {
        const r = parseReplyText(`reply_token: ${TOKEN}\n${line}\n---\nWhy.`);
        expect(r, line).toMatchObject({ token: TOKEN, status: word, statusProblem: null, answer: 'Why.' });
        expect(replyStatus({ ...r, bodyKind: 'text', attachments: [] }), line).toBe(word);
      }
    }
    // Near misses are not the word: gate 11 refuses them, naming the words it takes.
    for (const line of ['status: reject', 'status: rejected.', 'status: declined', 'status: re jected', 'status: rejected working']) {
      const r = parseReplyText(`reply_token: ${TOKEN}\n${line}\n---\nWhy.`);
      expect(replyStatus({ ...r, bodyKind: 'text', attachments: [] }), line).toEqual({ verdict: 'bad-status', reason: `gate 11: status "${r.status}"; expected done, input-required, failed, rejected or working` });
    }
  });

  it('a rejected reply: the answer after the separator is the reason, whole; without one it is empty', async () => {
    const reason = 'I will not book travel for a third party.\n\nMy operator forbids it.';
    expect(parseReplyText(block(reason, TOKEN, 'Rejected'))).toEqual({ token: TOKEN, tokenProblem: null, status: 'rejected', statusProblem: null, answer: reason, omittedLines: 0 });
    expect(parseReplyText(`reply_token: ${TOKEN}\nstatus: rejected\n`)).toMatchObject({ status: 'rejected', answer: '' });
    // Through the MIME parser: quoted-printable, a quote of the request left out and counted.
    const mail = await compose({ text: `reply_token: ${TOKEN}\nStatus: REJECTED\n---\n${reason}\n\nOn Mon, 1 Jan 2030 at 10:00, Bridge <me@example.com> wrote:\n> reply_token: ${OLD}\n`, textEncoding: 'quoted-printable' });
    expect(await parseReply(mail)).toMatchObject({ token: TOKEN, status: 'rejected', answer: reason, omittedLines: 2, bodyKind: 'text' });
  });

  it('counts any reply_token line, whatever its value', () => {
    expect(parseReplyText(`reply_token: not-hex\nstatus: done\n---\nx`).token).toBe('not-hex');
    expect(parseReplyText(`reply_token: ${TOKEN}\nreply_token:\nstatus: done\n---\nx`)).toMatchObject({ token: null, tokenProblem: 'several' });
  });

  it('flags a token or status written twice', () => {
    expect(parseReplyText(`reply_token: ${TOKEN}\nreply_token: ${TOKEN}\nstatus: done\nstatus: failed\n---\nx`)).toMatchObject({
      token: null,
      tokenProblem: 'several',
      status: null,
      statusProblem: 'several',
      answer: 'x',
    });
  });

  it('flags missing lines, and ignores key lines after the separator', () => {
    expect(parseReplyText(`---\nreply_token: ${TOKEN}\nstatus: done`)).toMatchObject({ token: null, tokenProblem: 'missing', status: null, statusProblem: 'missing', answer: `reply_token: ${TOKEN}\nstatus: done` });
  });

  it('reports a token found only in quoted text', () => {
    const text = `Done, see below.\n\nOn Mon, 1 Jan 2030 at 10:00, Bridge <me@example.com> wrote:\n> reply_token: ${OLD}\n> status: done | input-required | failed | working\n> ---\n`;
    expect(parseReplyText(text)).toMatchObject({ token: null, tokenProblem: 'only-in-quote', status: null, statusProblem: 'missing', answer: '' });
  });

  it('reports a forwarded dispatch whose token is only inside the forward', () => {
    const text = `FYI\n\n---------- Forwarded message ---------\nFrom: Bridge <me@example.com>\nDate: Mon, 1 Jan 2030\nSubject: task\n\nreply_token: ${OLD}\nstatus: done | input-required | failed | working\n---\nThe job.`;
    expect(parseReplyText(text)).toMatchObject({ token: null, tokenProblem: 'only-in-quote', answer: '' });
    expect(parseReplyText(text.replace('---------- Forwarded message ---------', 'Begin forwarded message:'))).toMatchObject({ tokenProblem: 'only-in-quote' });
  });

  it('stops the answer at Outlook-style quoted headers (email_reply_parser #69)', () => {
    const text = `${block('The answer.\n')}\n________________________________\nFrom: Bridge <me@example.com>\nSent: Monday, January 1, 2030 10:00 AM\nTo: Agent <agent@agent.example>\nSubject: task\n\nreply_token: ${OLD}\nstatus: working\n`;
    const { bodyKind: _kind, attachments: _none, ...expected } = good('The answer.');
    expect(parseReplyText(text)).toEqual(expected);
    expect(parseReplyText(text.replace(/_{32}\n/, '')).answer).toBe('The answer.');
    const only = `Sure.\n\n*From:* Bridge <me@example.com>\n*Sent:* Monday\n*To:* Agent\n*Subject:* task\n\nreply_token: ${OLD}`;
    expect(parseReplyText(only)).toMatchObject({ token: null, tokenProblem: 'only-in-quote' });
  });

  it('stops at -----Original Message-----', () => {
    expect(parseReplyText(`${block('A.')}\n-----Original Message-----\nFrom: x\nreply_token: ${OLD}`)).toMatchObject({ token: TOKEN, answer: 'A.' });
  });

  it('stops at an `On … wrote:` line, also wrapped over two lines', () => {
    const one = `${block('A.\n')}\nOn Mon, Jan 1, 2030 at 10:00 AM Bridge <me@example.com> wrote:\n> old\n`;
    expect(parseReplyText(one)).toMatchObject({ token: TOKEN, answer: 'A.' });
    const two = `${block('A.\n')}\nOn Mon, Jan 1, 2030 at 10:00 AM Bridge <me@example.com>\nwrote:\n\nold text without quote marks\n`;
    expect(parseReplyText(two)).toMatchObject({ token: TOKEN, answer: 'A.' });
  });

  it('does not stop at a sentence that merely starts with "On" and ends with "wrote:"', () => {
    expect(parseReplyText(block('On the other hand, the function wrote:\nx = 1')).answer).toBe('On the other hand, the function wrote:\nx = 1');
  });

  it('stops the answer at a `-- ` signature', () => {
    expect(parseReplyText(`${block('A.\nB.\n')}\n-- \nAgent\nhttps://agent.example`)).toMatchObject({ answer: 'A.\nB.' });
    expect(parseReplyText(`${block('A.\n')}--\nAgent`)).toMatchObject({ answer: 'A.' });
  });

  it('keeps `>` lines that no attribution introduces (a Markdown block quote, even at the end)', () => {
    const text = `${block('Intro.\n\n> A quoted spec line.\n\nMy reading of it.\n')}\n> closing quote 1\n>\n> closing quote 2\n`;
    expect(parseReplyText(text)).toMatchObject({
      token: TOKEN,
      answer: 'Intro.\n\n> A quoted spec line.\n\nMy reading of it.\n\n> closing quote 1\n>\n> closing quote 2',
      omittedLines: 0,
    });
  });

  it('cuts quoted text an attribution introduces, and counts what it left out', () => {
    const text = `${block('The answer.')}\n\nOn Mon, 30 Nov 2026 at 10:00, me@example.com wrote:\n> the request\n> more\n`;
    expect(parseReplyText(text)).toMatchObject({ answer: 'The answer.', omittedLines: 3 });
  });

  it('keeps a `--` line followed by more than a signature, and cuts a short signature', () => {
    expect(parseReplyText(block(`Plan:\n--\n${Array.from({ length: 20 }, (_, i) => `step ${i}`).join('\n')}`)).answer).toMatch(/^Plan:\n--\nstep 0\n[\s\S]*step 19$/);
    expect(parseReplyText(block('Done.\n-- \nGrok\nagent.example'))).toMatchObject({ answer: 'Done.', omittedLines: 3 });
  });

  it('takes the first `---` line as the separator; later ones belong to the answer', () => {
    expect(parseReplyText(block('Part 1\n---\nPart 2')).answer).toBe('Part 1\n---\nPart 2');
  });

  it.each([
    ['----', `reply_token: ${TOKEN}\nstatus: done\n----\nx`],
    [' ---', `reply_token: ${TOKEN}\nstatus: done\n ---\nx`],
    ['--- x', `reply_token: ${TOKEN}\nstatus: done\n--- x\nx`],
  ])('does not take %j for the separator: the answer is empty', (_sep, text) => {
    expect(parseReplyText(text)).toMatchObject({ token: TOKEN, status: 'done', answer: '' });
  });

  it('ignores keys below a quote marker that comes before the separator', () => {
    expect(parseReplyText(`> quoted first\nreply_token: ${TOKEN}\nstatus: done\n---\nx`)).toMatchObject({ token: null, tokenProblem: 'only-in-quote', answer: '' });
  });

  it('gives the answer LF line breaks whatever line ends the body mixes (CRLF, LF, bare CR)', () => {
    const r = parseReplyText(`reply_token: ${TOKEN}\r\nstatus: done\r\n---\r\n\r\none\r\ntwo\rthree\nfour\r\r\nfive\r\n\r\n`);
    expect(r).toMatchObject({ answer: 'one\ntwo\nthree\nfour\n\nfive', omittedLines: 0 });
  });

  it('ignores a byte-order mark and reads bare CR line ends', () => {
    expect(parseReplyText(`\uFEFFreply_token: ${TOKEN}\rstatus: done\r---\rA.`)).toEqual({ token: TOKEN, tokenProblem: null, status: 'done', statusProblem: null, answer: 'A.', omittedLines: 0 });
  });
});

describe('parseReply on large messages', () => {
  it('parses a large reply on the offload worker with the same result as in place', async () => {
    const answer = Array.from({ length: 20_000 }, (_, i) => `Line ${i}: ${'x'.repeat(30)}`).join('\n');
    const mail = raw('Content-Type: text/plain; charset=utf-8', block(answer));
    expect(mail.length).toBeGreaterThan(OFFLOAD_MIN_BYTES);
    const off = await parseReply(mail);
    expect(off).toEqual(good(answer));
    expect(off).toEqual(await parseReplyHere(mail));
  });

  it('does not read a body past its time budget or its size budget, and says so', async () => {
    const mail = raw('Content-Type: text/plain; charset=utf-8', block('x'.repeat(OFFLOAD_MIN_BYTES)));
    // The budget's clock runs out in the microtask after the job is posted: before the worker can
    // answer (its answer is a message event, a later turn of the event loop), whatever the machine.
    const spentAtOnce: BudgetTimer = (_ms, expire) => {
      queueMicrotask(expire);
      return () => undefined;
    };
    expect(await parseReply(mail, { budgetMs: 1, timer: spentAtOnce })).toEqual({
      token: null,
      tokenProblem: 'unparsed',
      status: null,
      statusProblem: 'missing',
      answer: '',
      omittedLines: 0,
      bodyKind: 'none',
      unparsed: expect.stringMatching(/^not done within the 0\.001 s time budget \(\d+ bytes\)$/) as unknown,
      unparsedBy: 'time',
      attachments: [],
    });
    const huge = Buffer.concat([mail, Buffer.alloc(REPLY_PARSE_MAX_BYTES)]);
    expect(await parseReply(huge)).toMatchObject({ tokenProblem: 'unparsed', unparsed: `${huge.length} bytes, over the 32 MiB reply parse budget`, unparsedBy: 'size' });
    expect((await parseReply(mail)).token).toBe(TOKEN); // a fresh worker serves the next one
  });
});

describe('parseReply: where a small message is parsed', () => {
  // A budget spent before the worker can answer: a message parsed on the worker comes back
  // unparsed:time, one parsed in place is read whatever the budget.
  const spentAtOnce: BudgetTimer = (_ms, expire) => {
    queueMicrotask(expire);
    return () => undefined;
  };

  it('converts an HTML-only body on the worker, under its budgets, however small (attack review 6, F1: nested quotes held the event loop 18 s)', async () => {
    const html = raw('Content-Type: text/html; charset=utf-8', `<p>${block('the answer').replace(/\n/g, '<br>')}</p>`);
    expect(html.length).toBeLessThan(OFFLOAD_MIN_BYTES);
    expect(await parseReply(html, { budgetMs: 1, timer: spentAtOnce })).toMatchObject({ token: null, tokenProblem: 'unparsed', unparsedBy: 'time' });
    expect(await parseReply(html)).toMatchObject({ token: TOKEN, bodyKind: 'html', answer: 'the answer' });
  });

  it('parses a small text body in place, with an HTML alternative beside it', async () => {
    const text = raw('Content-Type: text/plain; charset=utf-8', block('the answer'));
    expect(await parseReply(text, { budgetMs: 1, timer: spentAtOnce })).toEqual(good('the answer'));
    const alternative = raw(
      'Content-Type: multipart/alternative; boundary="b"',
      `--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${block('the answer')}\r\n--b\r\nContent-Type: text/html\r\n\r\n${'<blockquote>'.repeat(300)}x${'</blockquote>'.repeat(300)}\r\n--b--\r\n`,
    );
    expect(await parseReply(alternative, { budgetMs: 1, timer: spentAtOnce })).toMatchObject({ token: TOKEN, bodyKind: 'text', answer: 'the answer' });
  });
});

describe('parseReply: a message that exhausts the worker heap', () => {
  it('is unparsed:error once it stopped the worker twice, and the next message gets a fresh worker', async () => {
    const html = raw('Content-Type: text/html; charset=utf-8', `<p>${block('the answer').replace(/\n/g, '<br>')}</p>${'<p>para <b>bold</b> text</p>'.repeat(100_000)}`);
    setWorkerHeapLimit(8);
    try {
      expect(await parseReply(html)).toMatchObject({ token: null, tokenProblem: 'unparsed', unparsedBy: 'error', unparsed: expect.stringMatching(/^the parse worker stopped twice while judging this message \(.*memory limit/) as unknown });
    } finally {
      setWorkerHeapLimit(WORKER_HEAP_MB);
    }
    expect(await parseReply(html)).toMatchObject({ token: TOKEN, bodyKind: 'html' });
  });
});

describe('parseReply: an HTML-only body the converter turns into no text', () => {
  const html = (depth: number) => `<p>${block('the answer').replace(/\n/g, '<br>')}</p>${'<div>'.repeat(depth)}x${'</div>'.repeat(depth)}`;

  it('is unparsed:error when the HTML holds text (deep nesting), not a reply without a block', async () => {
    const shallow = await parseReply(raw('Content-Type: text/html; charset=utf-8', html(10)));
    expect(shallow).toMatchObject({ token: TOKEN, bodyKind: 'html' });
    expect(shallow.unparsedBy).toBeUndefined();
    const deep = await parseReply(raw('Content-Type: text/html; charset=utf-8', html(3000)));
    expect(deep).toMatchObject({ token: null, tokenProblem: 'unparsed', unparsedBy: 'error', unparsed: expect.stringContaining('its conversion to text gave none') as unknown });
  });

  it('an HTML body with no text in it stays a reply without a block', async () => {
    const empty = await parseReply(raw('Content-Type: text/html; charset=utf-8', '<html><body><p> </p>\n<br></body></html>'));
    expect(empty.tokenProblem).not.toBe('unparsed');
    expect(empty.token).toBeNull();
  });
});

describe('parseReplyText on hostile sizes', () => {
  // Each shape as a 2 MB answer: linear parsing takes well under a second; the quadratic parse
  // this replaces took about a minute on 3 MB of rule lines. The test's own timeout is the guard.
  const MB2 = 2 * 1024 * 1024;
  const fill = (line: string): string => line.repeat(Math.ceil(MB2 / line.length));
  it.each([
    ['Outlook rule lines', fill('______________________________\n')],
    ['rule lines between blank lines', fill('____________\n\n')],
    ['"On … wrote" look-alikes of digits', fill(`On ${'1'.repeat(390)}\n`)],
    ['wrapped "On …" look-alikes', fill(`On 1 ${'a'.repeat(380)}\nwrite:\n`)],
    ['From: blocks without Sent/To', fill('From: someone@example.com\nCc: x\n')],
    ['quote markers', fill('> quoted text\n')],
    ['deep quote nesting', fill(`${'>'.repeat(300)}\n`)],
    ['many short lines', fill('a\n')],
    ['blank lines', fill('\n')],
    ['one long line', 'x'.repeat(MB2)],
    ['long lines of white space', fill(`${' '.repeat(100_000)}\n`)],
  ])('%s', (_shape, answer) => {
    const r = parseReplyText(`${block(answer)}\nThe end.`);
    expect(r).toMatchObject({ token: TOKEN, status: 'done' });
    expect(r.answer.endsWith('The end.')).toBe(true);
  });

  it('still cuts at an Outlook block under a rule, and at `On … wrote:`, after a hostile run', () => {
    const rules = '______________________________\n'.repeat(100_000);
    const outlook = `________________________________\nFrom: Bridge <me@example.com>\nSent: Monday\nTo: Agent\nSubject: task\n\nold`;
    expect(parseReplyText(block(`${rules}${outlook}`))).toMatchObject({ answer: rules.trimEnd(), omittedLines: 6 });
    const digits = `On ${'1'.repeat(390)}\n`.repeat(20_000);
    expect(parseReplyText(block(`${digits}\nOn Mon, 1 Jan 2030, me wrote:\n> old`)).answer).toBe(digits.trimEnd());
  });

  it('stays linear on a long line that looks like the start of a quote header', () => {
    // Quote markers are only matched on lines up to 400 characters (MAX_MARKER_LINE), so the
    // patterns never backtrack over a hostile 200 KB line; the test's own timeout is the guard.
    const line = `On 1 ${'a 1 '.repeat(50_000)}`;
    const r = parseReplyText(`${block(`${line}\n${line}`)}\nend`);
    expect(r.answer.endsWith('end')).toBe(true);
  });
});
