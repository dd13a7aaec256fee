import { dkimVerify } from 'mailauth';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  buildReplyMail,
  dkimTxtName,
  generateDkimKey,
  replyBody,
  signatureB,
  type ReplyMailOptions,
} from '../../../src/demo/reply-mail.js';

const DOMAIN = 'agent.example';
const SELECTOR = 'demo';
const TOKEN = '0123456789abcdef0123456789abcdef';
const PROVIDER = {
  mxHost: 'mx1.messagingengine.com',
  authservId: 'mx1.messagingengine.com',
  fromHost: 'mail.agent.example',
  fromIp: '192.0.2.25',
};

let key: ReturnType<typeof generateDkimKey>;
beforeAll(() => {
  key = generateDkimKey();
});

/**
 * A mailauth resolver serving only the agent's key; anything else is ENOTFOUND, as mailauth expects
 * of a resolver.
 */
function resolver(txt: string) {
  return (name: string, type: string): Promise<string[][]> => {
    if (type === 'TXT' && name === dkimTxtName(SELECTOR, DOMAIN)) return Promise.resolve([[txt.slice(0, 255), txt.slice(255)]]);
    return Promise.reject(Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: 'ENOTFOUND' }));
  };
}

function options(over: Partial<ReplyMailOptions> = {}): ReplyMailOptions {
  return {
    from: 'Grok Agent <agent@agent.example>',
    to: 'me@bridge.test',
    subject: 'Re: research [GROK:task-1]',
    date: new Date('2025-03-04T05:06:07Z'),
    messageId: '<reply-1@agent.example>',
    token: TOKEN,
    status: 'done',
    answer: 'The answer.\nSecond line.',
    dkim: { domain: DOMAIN, selector: SELECTOR, privateKeyPem: key.privateKeyPem },
    provider: PROVIDER,
    ...over,
  };
}

/** Header field names of the raw header block, top to bottom. */
function headerNames(raw: Buffer): string[] {
  const head = raw.toString('utf8').split('\r\n\r\n')[0]!;
  return head.split('\r\n').filter((l) => /^[^\s:]+:/.test(l)).map((l) => l.slice(0, l.indexOf(':')).toLowerCase());
}

/** A header field's value, unfolded. */
function field(raw: Buffer, name: string): string {
  const head = raw.toString('utf8').split('\r\n\r\n')[0]!.replace(/\r\n[ \t]+/g, ' ');
  const line = head.split('\r\n').find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line?.slice(name.length + 1).trim() ?? '';
}

describe('keys', () => {
  it('generates an RSA-2048 key whose TXT value is v=DKIM1; k=rsa; p=<spki>', () => {
    expect(key.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(key.publicKeyTxt).toMatch(/^v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA[A-Za-z0-9+/]+=*$/);
    expect(dkimTxtName('s1', 'example.com')).toBe('s1._domainkey.example.com');
  });
});

describe('buildReplyMail', () => {
  it('signs a mail that mailauth verifies as pass, aligned with the From domain', async () => {
    const raw = await buildReplyMail(options());
    const res = await dkimVerify(raw, { resolver: resolver(key.publicKeyTxt) });
    expect(res.results).toHaveLength(1);
    const r = res.results[0]!;
    expect(r.status.result).toBe('pass');
    expect(r.signingDomain).toBe(DOMAIN);
    expect(r.selector).toBe(SELECTOR);
    expect(r.status.aligned).toBe(DOMAIN);
    const sig = field(raw, 'DKIM-Signature');
    expect(sig).toMatch(/a=rsa-sha256/);
    expect(sig).toMatch(/c=relaxed\/relaxed/);
    expect(sig).not.toMatch(/;\s*l=/);
    for (const h of ['From', 'To', 'Subject', 'Date', 'Message-ID']) expect(sig).toMatch(new RegExp(`h=[^;]*\\b${h}\\b`, 'i'));
  });

  it('stamps Authentication-Results, then Received, above the DKIM-Signature in byte order', async () => {
    const raw = await buildReplyMail(options());
    expect(headerNames(raw).slice(0, 4)).toEqual(['authentication-results', 'received', 'dkim-signature', 'from']);
    const text = raw.toString('utf8');
    expect(text.indexOf('Authentication-Results:')).toBe(0);
    expect(text.indexOf('\r\nReceived:')).toBeLessThan(text.indexOf('\r\nDKIM-Signature:'));

    const ar = field(raw, 'Authentication-Results');
    const b8 = signatureB(`DKIM-Signature: ${field(raw, 'DKIM-Signature')}`).slice(0, 8);
    expect(b8).toHaveLength(8);
    expect(ar).toBe(
      `mx1.messagingengine.com; dkim=pass (2048-bit rsa key sha256) header.d=agent.example ` +
        `header.i=@agent.example header.b=${b8} header.a=rsa-sha256 header.s=demo; ` +
        `spf=pass smtp.mailfrom=agent@agent.example; dmarc=pass (p=reject) header.from=agent.example`,
    );
    expect(field(raw, 'Received')).toMatch(
      /^from mail\.agent\.example \(mail\.agent\.example \[192\.0\.2\.25\]\) .*by mx1\.messagingengine\.com \(Postfix\) with ESMTPS id [0-9A-Za-z]{15} for <me@bridge\.test>; Tue, 04 Mar 2025 05:06:09 \+0000$/,
    );
    // The stamp is not covered by the signature, as in real delivery.
    expect((await dkimVerify(raw, { resolver: resolver(key.publicKeyTxt) })).results[0]!.status.result).toBe('pass');
  });

  it('writes the reply block as the text/plain body with CRLF line ends only', async () => {
    const raw = await buildReplyMail(options());
    const text = raw.toString('utf8');
    expect(text).toMatch(/Content-Type: text\/plain; charset=utf-8/);
    expect(text).toContain(replyBody(TOKEN, 'done', 'The answer.\nSecond line.').replace(/\n/g, '\r\n'));
    expect(text.replace(/\r\n/g, '')).not.toMatch(/[\r\n]/);
    expect(field(raw, 'Subject')).toBe('Re: research [GROK:task-1]');
    expect(field(raw, 'Message-ID')).toBe('<reply-1@agent.example>');
    expect(field(raw, 'Date')).toBe('Tue, 04 Mar 2025 05:06:07 +0000');
  });

  it('builds multipart/alternative when html is given, and still verifies', async () => {
    const raw = await buildReplyMail(options({ html: '<p>reply_token: x</p>' }));
    expect(field(raw, 'Content-Type')).toMatch(/^multipart\/alternative;/);
    expect(raw.toString()).toMatch(/Content-Type: text\/html; charset=utf-8/);
    expect((await dkimVerify(raw, { resolver: resolver(key.publicKeyTxt) })).results[0]!.status.result).toBe('pass');
  });

  it('does not verify once the body is changed after signing (mailauth says neutral, not fail)', async () => {
    const raw = await buildReplyMail(options());
    const tampered = Buffer.from(raw.toString('utf8').replace('The answer.', 'Evil answer'));
    const r = (await dkimVerify(tampered, { resolver: resolver(key.publicKeyTxt) })).results[0]!;
    expect(r.status.result).not.toBe('pass');
  });

  it('reports dkim=none and dmarc=fail for an unsigned mail, and honours results and plain style', async () => {
    const unsigned = await buildReplyMail(options({ dkim: undefined }));
    expect(headerNames(unsigned)).not.toContain('dkim-signature');
    expect(field(unsigned, 'Authentication-Results')).toMatch(/dkim=none .*dmarc=fail \(p=reject\) header\.from=agent\.example$/);

    const plain = await buildReplyMail(options({ provider: { ...PROVIDER, style: 'plain' } }));
    expect(field(plain, 'Authentication-Results')).toBe(
      'mx1.messagingengine.com; dkim=pass header.d=agent.example header.s=demo; spf=pass smtp.mailfrom=agent@agent.example; dmarc=pass header.from=agent.example',
    );

    const custom = await buildReplyMail(options({ provider: { ...PROVIDER, results: 'dkim=fail header.d=agent.example; dmarc=fail' } }));
    expect(field(custom, 'Authentication-Results')).toBe('mx1.messagingengine.com; dkim=fail header.d=agent.example; dmarc=fail');
  });

  it('puts extra headers below the signature, and a custom headerList is honoured', async () => {
    const raw = await buildReplyMail(
      options({
        headers: { 'Authentication-Results': 'evil.example; dkim=pass header.d=agent.example' },
        dkim: { domain: DOMAIN, selector: SELECTOR, privateKeyPem: key.privateKeyPem, headerList: ['From', 'Subject'] },
      }),
    );
    const names = headerNames(raw);
    expect(names.lastIndexOf('authentication-results')).toBeGreaterThan(names.indexOf('dkim-signature'));
    expect(field(raw, 'DKIM-Signature')).toMatch(/h=Subject: ?From;/);
    expect((await dkimVerify(raw, { resolver: resolver(key.publicKeyTxt) })).results[0]!.status.result).toBe('pass');
  });

  it('leaves the mail unstamped without provider, and refuses options with no body and no token', async () => {
    const raw = await buildReplyMail(options({ provider: undefined, dkim: undefined, body: 'free text' }));
    expect(headerNames(raw)[0]).toBe('from');
    expect(raw.toString()).toMatch(/\r\n\r\nfree text\r\n$/);
    await expect(buildReplyMail(options({ token: undefined }))).rejects.toThrow(TypeError);
  });

  it('throws when mailauth cannot sign with the key', async () => {
    await expect(
      buildReplyMail(options({ dkim: { domain: DOMAIN, selector: SELECTOR, privateKeyPem: 'not a key' } })),
    ).rejects.toThrow(/DKIM signing failed/);
  });
});
