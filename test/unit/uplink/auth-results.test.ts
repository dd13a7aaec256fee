import parseDkimHeaders from 'mailauth/lib/parse-dkim-headers.js';
import { describe, expect, it } from 'vitest';
import { parseAuthResults, parseIdlessAuthResults, propValue, type AuthResult } from '../../../src/uplink/auth-results.js';

/** Results as comparable strings: method=result, reason and sorted props, lower-cased. */
function normalise(results: Pick<AuthResult, 'method' | 'result' | 'reason' | 'props'>[]): string[] {
  return results
    .map((r) => {
      const props = r.props.map((p) => `${p.ptype}.${p.property}=${p.value}`.toLowerCase()).sort();
      return `${r.method}=${r.result}${r.reason !== null ? ` reason=${r.reason}` : ''} ${props.join(' ')}`.toLowerCase();
    })
    .sort();
}

/**
 * mailauth's reading of the same field, mapped to our shape: an independent oracle for the parser.
 * mailauth exports no Authentication-Results parser, so this test (only) loads its internal
 * `lib/parse-dkim-headers.js`; the product uses mailauth's public entry points only.
 */
function mailauthReading(value: string): { authservId: string; results: string[] } {
  const parsed = parseDkimHeaders(`Authentication-Results: ${value}`).parsed;
  const results: Pick<AuthResult, 'method' | 'result' | 'reason' | 'props'>[] = [];
  for (const [method, raw] of Object.entries(parsed)) {
    if (method === 'header' || method === 'value') continue;
    for (const entry of Array.isArray(raw) ? raw : [raw]) {
      const e = entry as Record<string, unknown>;
      if (method === 'none' && e.value === '') continue;
      const props: AuthResult['props'] = [];
      for (const [k, v] of Object.entries(e)) {
        if (k === 'value' || k === 'comment' || k === 'reason') continue;
        if (typeof v === 'string') props.push({ ptype: '', property: k, value: v });
        else for (const [p, pv] of Object.entries(v as Record<string, unknown>)) props.push({ ptype: k, property: p, value: String(pv) });
      }
      results.push({ method, result: String(e.value), reason: typeof e.reason === 'string' ? e.reason : null, props });
    }
  }
  return { authservId: String(parsed.value).split(/\s+/)[0] ?? '', results: normalise(results) };
}

// Real-shaped fields: Fastmail (several per message), Google, Yandex, Riseup, mailauth's own output,
// and the examples of RFC 8601 Appendix B.
const REAL: [string, string][] = [
  [
    'Fastmail dkim/dmarc/iprev/spf',
    'mx3.messagingengine.com;\r\n    dkim=pass (2048-bit rsa key sha256) header.d=mail.ru header.i=@mail.ru\r\n      header.b=0EDw+VrK header.a=rsa-sha256 header.s=mail4 x-bits=2048;\r\n    dmarc=pass policy.published-domain-policy=reject\r\n      policy.applied-disposition=none policy.evaluated-disposition=none\r\n      (p=reject,d=none,d.eval=none) policy.policy-from=p\r\n      header.from=mail.ru;\r\n    iprev=pass smtp.remote-ip=94.100.181.251 (smtpng1.i.mail.ru);\r\n    spf=pass smtp.mailfrom=alice@mail.ru smtp.helo=smtpng1.i.mail.ru',
  ],
  ['Fastmail x-csa', 'phl-mx-04.messagingengine.com;\r\n    x-csa=none;\r\n    x-me-sender=none;\r\n    x-ptr=pass smtp.helo=mta-out5.pod20.usw2.zdsys.com\r\n      policy.ptr=mta-out5.pod20.usw2.zdsys.com'],
  ['Fastmail bimi', 'mx1.messagingengine.com;\r\n    bimi=skipped (DMARC Policy is not at enforcement)'],
  ['Fastmail arc', 'mx2.messagingengine.com;\r\n    arc=pass (as.1.microsoft.com=pass, ams.1.microsoft.com=pass)\r\n    smtp.remote-ip=40.92.89.101'],
  [
    'Google',
    'mx.google.com;\r\n       dkim=pass header.i=@gmail.com header.s=20161025 header.b="BE9/o/N5";\r\n       spf=pass (google.com: domain of alexdeucher@gmail.com designates 209.85.220.65 as permitted sender) smtp.mailfrom=alexdeucher@gmail.com;\r\n       dmarc=pass (p=NONE sp=QUARANTINE dis=NONE) header.from=gmail.com',
  ],
  [
    'Google with arc comment',
    'mx.google.com;\r\n       dkim=pass header.i=@gmail.com header.s=20161025 header.b=AArzbi/1;\r\n       arc=pass (i=1 spf=pass spfdomain=gmail.com dkim=pass dkdomain=gmail.com dmarc=pass fromdomain=gmail.com);\r\n       spf=pass (google.com: best guess record) smtp.mailfrom=bugreporter@example.com;\r\n       dmarc=pass (p=NONE sp=NONE dis=NONE) header.from=gmail.com',
  ],
  ['Yandex', 'mxback27g.mail.yandex.net; dkim=pass header.i=@yandex.ru'],
  ['Riseup, ";" inside a comment', 'mx1.riseup.net;\r\n\tdkim=pass (1024-bit key; unprotected) header.d=yandex.ru header.i=@yandex.ru header.a=rsa-sha256 header.s=mail header.b=avNJu6sw;\r\n\tdkim-atps=neutral'],
  [
    'mailauth output',
    'mx.example.com;\r\n dkim=pass header.i=@agent.example header.s=s1 header.a=rsa-sha256 header.b=Yc04Qij6;\r\n spf=pass (mx.example.com: domain of x@agent.example designates 192.0.2.1 as permitted sender) smtp.mailfrom=x@agent.example smtp.helo=mail.agent.example;\r\n dmarc=pass (p=REJECT sp=REJECT pct=100) header.from=agent.example',
  ],
  ['RFC 8601 B.2', 'example.org 1; none'],
  ['RFC 8601 B.3', 'example.com; spf=pass smtp.mailfrom=example.net'],
  ['RFC 8601 B.4', 'example.com;\r\n          auth=pass (cram-md5) smtp.auth=sender@example.net;\r\n          spf=pass smtp.mailfrom=example.net'],
  ['RFC 8601 B.4 iprev', 'example.com; iprev=pass\r\n          policy.iprev=192.0.2.200'],
  [
    'RFC 8601 B.5',
    'mail-router.example.net;\r\n          dkim=pass (good signature) header.d=newyork.example.com\r\n                header.b=oINEO8hg;\r\n          dkim=fail (bad signature) header.d=mail-router.example.net\r\n                header.b=EToRSuvU',
  ],
  ['RFC 8601 B.6', 'example.com;\r\n          sender-id=fail header.from=example.com;\r\n          dkim=pass (good signature) header.d=sub.example.com'],
  ['dkim with reason', 'example.com; dkim=fail reason="signature verification failed" header.d=example.net header.b=abcdefgh'],
  ['quoted local part', 'mx.google.com; dmarc=pass header.from="privacy"@acme.test'],
];

describe('parseAuthResults on real-shaped fields', () => {
  it.each(REAL)('%s: agrees with mailauth on authserv-id, methods, results and properties', (_name, value) => {
    const ours = parseAuthResults(value);
    expect(ours).not.toBeNull();
    const theirs = mailauthReading(value);
    expect(ours!.authservId).toBe(theirs.authservId);
    expect(normalise(ours!.results)).toEqual(theirs.results);
  });

  it('reads a Fastmail field in detail', () => {
    const r = parseAuthResults(REAL[0]![1])!;
    expect(r.authservId).toBe('mx3.messagingengine.com');
    expect(r.version).toBeNull();
    expect(r.results.map((x) => `${x.method}=${x.result}`)).toEqual(['dkim=pass', 'dmarc=pass', 'iprev=pass', 'spf=pass']);
    const dkim = r.results[0]!;
    expect(dkim.props).toEqual([
      { ptype: 'header', property: 'd', value: 'mail.ru' },
      { ptype: 'header', property: 'i', value: '@mail.ru' },
      { ptype: 'header', property: 'b', value: '0EDw+VrK' },
      { ptype: 'header', property: 'a', value: 'rsa-sha256' },
      { ptype: 'header', property: 's', value: 'mail4' },
      { ptype: '', property: 'x-bits', value: '2048' },
    ]);
    expect(propValue(r.results[1]!, 'header', 'from')).toBe('mail.ru');
    expect(propValue(r.results[1]!, 'policy', 'published-domain-policy')).toBe('reject');
  });

  it('reads the version, `none`, a method version and a reason', () => {
    expect(parseAuthResults('example.org 1; none')).toEqual({ authservId: 'example.org', version: 1, results: [] });
    expect(parseAuthResults('example.org (comment) 2 (c); none')?.version).toBe(2);
    const v = parseAuthResults('example.com; dkim/1=pass header.d=example.net')!;
    expect(v.results[0]).toMatchObject({ method: 'dkim', methodVersion: 1, result: 'pass' });
    expect(parseAuthResults('example.com; dkim / 2 = pass')!.results[0]).toMatchObject({ methodVersion: 2, result: 'pass' });
    expect(parseAuthResults(REAL[15]![1])!.results[0]?.reason).toBe('signature verification failed');
    expect(parseAuthResults('example.com; spf=fail reason=nope')!.results[0]?.reason).toBe('nope');
  });

  it('lower-cases methods, results, ptypes and properties, and keeps values as written', () => {
    const r = parseAuthResults('Example.COM; DKIM=PASS Header.D=Agent.Example HEADER.b="AbC/dE+f"')!;
    expect(r.authservId).toBe('Example.COM');
    expect(r.results[0]).toEqual({
      method: 'dkim',
      methodVersion: null,
      result: 'pass',
      reason: null,
      props: [
        { ptype: 'header', property: 'd', value: 'Agent.Example' },
        { ptype: 'header', property: 'b', value: 'AbC/dE+f' },
      ],
    });
  });

  it('accepts a quoted authserv-id, comments anywhere CFWS is, and a trailing semicolon', () => {
    const r = parseAuthResults('(lead) "mx.example.com" (c1);(c2) spf (c3) = (c4) pass (c5) smtp (c6) . (c7) mailfrom (c8) = (c9) a@b.test (c10);')!;
    expect(r.authservId).toBe('mx.example.com');
    expect(r.results).toEqual([{ method: 'spf', methodVersion: null, result: 'pass', reason: null, props: [{ ptype: 'smtp', property: 'mailfrom', value: 'a@b.test' }] }]);
  });

  it('keeps bounce addresses with "=" and IPv6 remote addresses whole', () => {
    const r = parseAuthResults('mx.example.com; spf=pass smtp.mailfrom=bounce+abc=example.com@mg.example.net; iprev=pass smtp.remote-ip=2001:db8::25')!;
    expect(propValue(r.results[0]!, 'smtp', 'mailfrom')).toBe('bounce+abc=example.com@mg.example.net');
    expect(propValue(r.results[1]!, 'smtp', 'remote-ip')).toBe('2001:db8::25');
  });
});

describe('parseAuthResults never turns reflected text into a result', () => {
  const methods = (v: string): string[] | undefined => parseAuthResults(v)?.results.map((r) => `${r.method}=${r.result}`);

  it('inside a quoted local part of smtp.mailfrom', () => {
    const v = 'mx1.messagingengine.com; spf=pass smtp.mailfrom="dkim=pass header.d=agent.example"@evil.test';
    const r = parseAuthResults(v)!;
    expect(methods(v)).toEqual(['spf=pass']);
    expect(propValue(r.results[0]!, 'smtp', 'mailfrom')).toBe('dkim=pass header.d=agent.example@evil.test');
    expect(mailauthReading(v).results).toEqual(normalise(r.results));
  });

  it('inside a quoted value with a semicolon and escaped quotes', () => {
    const v = 'mx1.messagingengine.com; dmarc=fail header.from="agent.example\\"; dkim=pass header.d=agent.example; x=\\""';
    expect(methods(v)).toEqual(['dmarc=fail']);
    expect(propValue(parseAuthResults(v)!.results[0]!, 'header', 'from')).toBe('agent.example"; dkim=pass header.d=agent.example; x="');
  });

  it('inside a comment', () => {
    expect(methods('mx1.messagingengine.com; spf=fail (dkim=pass header.d=agent.example; dmarc=pass) smtp.mailfrom=a@evil.test')).toEqual(['spf=fail']);
  });

  it('inside a nested comment (mailauth 4 misread it; mailauth 7 agrees with us)', () => {
    const v = 'mx1.messagingengine.com; spf=fail (outer (inner) ; dkim=pass header.d=agent.example) smtp.mailfrom=a@evil.test';
    expect(methods(v)).toEqual(['spf=fail']);
    expect(mailauthReading(v).results).toEqual(normalise(parseAuthResults(v)!.results));
  });

  it('as a value of an unknown property', () => {
    const r = parseAuthResults('mx.google.com; dkim=pass x.y=header.d=agent.example')!;
    expect(propValue(r.results[0]!, 'header', 'd')).toBeNull();
    expect(propValue(r.results[0]!, 'x', 'y')).toBe('header.d=agent.example');
  });

  it("keeps a result after an apostrophe in an address (mailauth 4 took ' for a quote; mailauth 7 agrees with us)", () => {
    const v = "mx1.messagingengine.com; spf=pass smtp.mailfrom=o'brien@evil.test; dkim=fail header.d=agent.example";
    expect(methods(v)).toEqual(['spf=pass', 'dkim=fail']);
    expect(mailauthReading(v).results).toEqual(normalise(parseAuthResults(v)!.results));
  });
});

describe('parseAuthResults refuses what is off the grammar', () => {
  it.each([
    ['Microsoft form without authserv-id', 'spf=pass (sender IP is 192.0.2.1) smtp.mailfrom=x.com; dkim=pass (signature was verified) header.d=x.com;dmarc=pass action=none header.from=x.com'],
    ['authserv-id only', 'example.com'],
    ['empty', ''],
    ['none beside a result', 'example.com; none; spf=pass'],
    ['missing result', 'example.com; dkim='],
    ['missing "="', 'example.com; dkim pass'],
    ['a word that is not a property', 'example.com; spf=pass smtp.mailfrom=a@b.test junk'],
    ['unterminated quoted string', 'example.com; spf=pass smtp.mailfrom="a@b.test'],
    ['unterminated comment', 'example.com; spf=pass (comment smtp.mailfrom=a@b.test'],
    ['unterminated nested comment', 'example.com; spf=pass (a (b) smtp.mailfrom=a@b.test'],
    ['text glued after a quoted value', 'example.com; dkim=pass header.d="x"header.b=y'],
    ['two reasons', 'example.com; dkim=fail reason=a reason=b'],
    ['missing property name', 'example.com; dkim=pass header.=x'],
    ['a quoted local part without a domain', 'example.com; spf=pass smtp.mailfrom="a"@'],
  ])('%s ⇒ null', (_name, value) => {
    expect(parseAuthResults(value)).toBeNull();
  });

  it('never throws on arbitrary input', () => {
    let seed = 11;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const alphabet = 'ab=;.()"\\ @\r\n\t-/1x';
    for (let n = 0; n < 2000; n++) {
      const s = Array.from({ length: Math.floor(rand() * 60) }, () => alphabet[Math.floor(rand() * alphabet.length)]).join('');
      expect(() => parseAuthResults(`mx.example.com; ${s}`)).not.toThrow();
    }
    expect(parseAuthResults(undefined as unknown as string)).toBeNull();
  });
});

describe('parseIdlessAuthResults (Microsoft)', () => {
  const MS = 'spf=pass (sender IP is 192.0.2.25)\r\n smtp.mailfrom=agent.example; dkim=pass (signature was verified)\r\n header.d=agent.example;dmarc=pass action=none\r\n header.from=agent.example;compauth=pass reason=100';

  it('reads the id-less form, which the strict parser refuses', () => {
    expect(parseAuthResults(MS)).toBeNull();
    const r = parseIdlessAuthResults(MS);
    expect(r?.authservId).toBe('');
    expect(r?.results.map((x) => `${x.method}=${x.result}`)).toEqual(['spf=pass', 'dkim=pass', 'dmarc=pass', 'compauth=pass']);
    expect(r?.results[1]?.props).toContainEqual({ ptype: 'header', property: 'd', value: 'agent.example' });
  });

  it('skips bare domain slots after the first result (the older form), never before it', () => {
    const old = 'spf=pass (sender IP is 193.70.39.8) smtp.mailfrom=kajander.info; outlook.com; dkim=pass (signature was verified) header.d=kajander.info;outlook.com; dmarc=pass action=none header.from=kajander.info;';
    expect(parseIdlessAuthResults(old)?.results.map((x) => x.method)).toEqual(['spf', 'dkim', 'dmarc']);
    expect(parseIdlessAuthResults('outlook.com; dkim=pass header.d=a.example')).toBeNull();
  });

  it('refuses an RFC 8601 field with an authserv-id, and text off the grammar', () => {
    expect(parseIdlessAuthResults('mx.google.com; dkim=pass header.i=@a.example')).toBeNull();
    expect(parseIdlessAuthResults('dkim=pass (unterminated header.d=a.example')).toBeNull();
    expect(parseIdlessAuthResults('dkim=pass header.d=a.example; evil text here')).toBeNull();
    expect(parseIdlessAuthResults('')).toBeNull();
  });

  it('keeps a reflected result inside a comment or quoted string a value', () => {
    const r = parseIdlessAuthResults('spf=fail (dkim=pass header.d=a.example) smtp.mailfrom="dkim=pass"@evil.example');
    expect(r?.results.map((x) => x.method)).toEqual(['spf']);
  });
});
