import { generateKeyPairSync } from 'node:crypto';
import { dkimSign } from 'mailauth';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { makeResolver, parseDkimSignatures, signaturesMatching, verifyDkimLocally, type DnsResolver } from '../../../src/uplink/dkim.js';
import { OFFLOAD_MIN_BYTES, type BudgetTimer } from '../../../src/uplink/offload.js';
import { parseHeaders } from '../../../src/uplink/raw-headers.js';

const MESSAGE = [
  'From: Agent <agent@agent.example>',
  'To: me@example.com',
  'Subject: Re: [GROK:0b7c2f7e-3f8e-4b8a-9a51-0d6b2a8f1c11]',
  'Date: Tue, 01 Jan 2030 00:00:00 +0000',
  'Message-ID: <reply-1@agent.example>',
  'MIME-Version: 1.0',
  'Content-Type: text/plain; charset=utf-8',
  '',
  'reply_token: 0123456789abcdef0123456789abcdef',
  'status: done',
  '---',
  'The answer.',
  '',
].join('\r\n');

function rsaKey(): { privateKeyPem: string; publicKeyB64: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { privateKeyPem: privateKey, publicKeyB64: publicKey.toString('base64') };
}

let key: ReturnType<typeof rsaKey>;
let otherKey: ReturnType<typeof rsaKey>;

/** Serves `v=DKIM1; k=rsa; p=…` at s1._domainkey.agent.example as two TXT chunks; nothing else exists. */
const resolver: DnsResolver = (name, rrtype) => {
  if (rrtype === 'TXT' && name === 's1._domainkey.agent.example') {
    const txt = `v=DKIM1; k=rsa; p=${key.publicKeyB64}`;
    return Promise.resolve([[txt.slice(0, 200), txt.slice(200)]]);
  }
  return Promise.reject(Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: 'ENOTFOUND' }));
};

async function signed(message: string, o: { privateKeyPem?: string; selector?: string; maxBodyLength?: number; expires?: Date } = {}): Promise<string> {
  const { signatures, errors } = await dkimSign(message, {
    signatureData: [
      {
        signingDomain: 'agent.example',
        selector: o.selector ?? 's1',
        privateKey: o.privateKeyPem ?? key.privateKeyPem,
        ...(o.maxBodyLength !== undefined ? { maxBodyLength: o.maxBodyLength } : {}),
      },
    ],
    ...(o.expires ? { expires: o.expires } : {}),
  } as Parameters<typeof dkimSign>[1]);
  expect(errors).toEqual([]);
  return signatures + message;
}

/** Every DKIM-Signature of the message: the keys verifyDkimLocally is to look up. */
const signaturesOf = (raw: Buffer) => parseDkimSignatures(parseHeaders(raw));

beforeAll(() => {
  key = rsaKey();
  otherKey = rsaKey();
});

describe('verifyDkimLocally', () => {
  it('passes a correctly signed message', async () => {
    const raw = Buffer.from(await signed(MESSAGE));
    const [sig] = parseDkimSignatures(parseHeaders(raw));
    const results = await verifyDkimLocally(raw, signaturesOf(raw), resolver);
    expect(results).toEqual([{ d: 'agent.example', s: 's1', b: sig!.b, status: 'pass', bodyLengthLimited: false, info: expect.stringMatching(/^dkim=pass /) as unknown }]);
  });

  it('verifies a large message on the offload worker, its key lookups answered by the resolver of the caller, within a time budget', async () => {
    const big = MESSAGE.replace('The answer.', `${'A long answer line.\r\n'.repeat(30_000)}The end.`);
    expect(big.length).toBeGreaterThan(OFFLOAD_MIN_BYTES);
    const raw = Buffer.from(await signed(big));
    const [sig] = parseDkimSignatures(parseHeaders(raw));
    expect(await verifyDkimLocally(raw, signaturesOf(raw), resolver)).toEqual([{ d: 'agent.example', s: 's1', b: sig!.b, status: 'pass', bodyLengthLimited: false, info: expect.stringMatching(/^dkim=pass /) as unknown }]);
    const tampered = Buffer.from(raw.toString().replace('The end.', 'The End.'));
    expect((await verifyDkimLocally(tampered, signaturesOf(tampered), resolver))[0]).toMatchObject({ status: 'neutral', info: expect.stringContaining('body hash did not verify') as unknown });
    // A lookup the resolver fails is a temperror, as on the main thread.
    const down: DnsResolver = () => Promise.reject(Object.assign(new Error('queryTxt ETIMEOUT'), { code: 'ETIMEOUT' }));
    expect((await verifyDkimLocally(raw, signaturesOf(raw), down))[0]?.status).toBe('temperror');
    // Past its budget the verification is stopped: neutral (final), the budget named. The budget's
    // clock runs out in the microtask after the job is posted, before the worker can answer.
    const spentAtOnce: BudgetTimer = (_ms, expire) => {
      queueMicrotask(expire);
      return () => undefined;
    };
    expect((await verifyDkimLocally(raw, signaturesOf(raw), resolver, { budgetMs: 1, timer: spentAtOnce }))[0]).toMatchObject({ status: 'neutral', info: expect.stringMatching(/^local DKIM verification not done within the 0\.001 s time budget/) as unknown });
    expect((await verifyDkimLocally(raw, signaturesOf(raw), resolver))[0]?.status).toBe('pass'); // a fresh worker serves the next one
  });

  it('looks a large message\'s keys up before its time budget starts: DNS that does not answer is a temperror (judged again), whatever the size, two signatures or one (was: neutral, final)', async () => {
    const big = MESSAGE.replace('The answer.', `${'A long answer line.\r\n'.repeat(30_000)}The end.`);
    const twice = Buffer.from(await signed(await signed(big), { selector: 's2', privateKeyPem: otherKey.privateKeyPem }));
    expect(twice.length).toBeGreaterThan(OFFLOAD_MIN_BYTES);
    // The budget's clock runs out the moment a key is asked for while it runs: a name server that
    // does not answer within the budget (mailauth asks one key after another, 5 s each).
    let running: (() => void) | null = null;
    const budget: BudgetTimer = (_ms, expire) => {
      running = expire;
      return () => {
        running = null;
      };
    };
    const asked: string[] = [];
    const silent: DnsResolver = (name) => {
      asked.push(name);
      running?.();
      return Promise.reject(Object.assign(new Error(`queryTxt ETIMEOUT ${name}`), { code: 'ETIMEOUT' }));
    };
    const results = await verifyDkimLocally(twice, signaturesOf(twice), silent, { timer: budget });
    expect(results.map((r) => [r.s, r.status])).toEqual([['s2', 'temperror'], ['s1', 'temperror']]);
    expect(asked.sort()).toEqual(['s1._domainkey.agent.example', 's2._domainkey.agent.example']); // each once: the worker's lookups are answered from the prefetch
    // Keys that answer are used by the worker as they came back.
    const both: DnsResolver = (name, rrtype) => (name === 's2._domainkey.agent.example' ? Promise.resolve([[`v=DKIM1; k=rsa; p=${otherKey.publicKeyB64}`]]) : resolver(name, rrtype));
    expect((await verifyDkimLocally(twice, signaturesOf(twice), both, { timer: budget })).map((r) => r.status)).toEqual(['pass', 'pass']);
  });

  it('looks a small message\'s keys up all at once: DNS that never answers costs one timeout to temperror, not one per signature (was: two, one after another)', async () => {
    const twice = Buffer.from(await signed(await signed(MESSAGE), { selector: 's2', privateKeyPem: otherKey.privateKeyPem }));
    expect(twice.length).toBeLessThan(OFFLOAD_MIN_BYTES);
    const timeoutMs = 5000;
    const asked: string[] = [];
    let firstAsked: () => void = () => undefined;
    const first = new Promise<void>((resolve) => (firstAsked = resolve));
    const never: DnsResolver = (name) => {
      asked.push(name);
      firstAsked();
      return new Promise(() => undefined);
    };
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const verified = verifyDkimLocally(twice, signaturesOf(twice), never, { timeoutMs });
      await first;
      // The injected clock stops short of one timeout: the second lookup is outstanding beside the first.
      await vi.advanceTimersByTimeAsync(timeoutMs - 1);
      expect(asked.sort()).toEqual(['s1._domainkey.agent.example', 's2._domainkey.agent.example']);
      // One timeout later both are temperror, and no key was asked for again.
      await vi.advanceTimersByTimeAsync(1);
      expect((await verified).map((r) => [r.s, r.status])).toEqual([['s2', 'temperror'], ['s1', 'temperror']]);
      expect(asked).toHaveLength(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('gives neutral, not fail, for a tampered body (so only pass is accepted)', async () => {
    const raw = Buffer.from((await signed(MESSAGE)).replace('The answer.', 'Another answer.'));
    const [r] = await verifyDkimLocally(raw, signaturesOf(raw), resolver);
    expect(r).toMatchObject({ status: 'neutral', info: expect.stringContaining('body hash did not verify') as unknown });
  });

  it('fails a signature made with another key', async () => {
    const raw = Buffer.from(await signed(MESSAGE, { privateKeyPem: otherKey.privateKeyPem }));
    const [r] = await verifyDkimLocally(raw, signaturesOf(raw), resolver);
    expect(r).toMatchObject({ status: 'fail', info: expect.stringContaining('bad signature') as unknown });
  });

  it('fails a signed header that was changed', async () => {
    const raw = Buffer.from((await signed(MESSAGE)).replace('Subject: Re:', 'Subject: Fwd:'));
    expect((await verifyDkimLocally(raw, signaturesOf(raw), resolver))[0]?.status).toBe('fail');
  });

  it('gives neutral ("no key") when the selector has no key record', async () => {
    const raw = Buffer.from(await signed(MESSAGE, { selector: 'missing' }));
    const [r] = await verifyDkimLocally(raw, signaturesOf(raw), resolver);
    expect(r).toMatchObject({ s: 'missing', status: 'neutral', info: expect.stringContaining('no key') as unknown });
  });

  it('passes an l= signature with appended text, and says it is body-length limited', async () => {
    const body = MESSAGE.slice(MESSAGE.indexOf('\r\n\r\n') + 4);
    const raw = Buffer.from(`${await signed(MESSAGE, { maxBodyLength: Buffer.byteLength(body) })}Appended by someone else.\r\n`);
    const [r] = await verifyDkimLocally(raw, signaturesOf(raw), resolver);
    expect(r).toMatchObject({ status: 'pass', bodyLengthLimited: true });
    expect(parseDkimSignatures(parseHeaders(raw))[0]?.bodyLengthLimited).toBe(true);
  });

  it('gives temperror when the lookup fails or outlasts the timeout', async () => {
    const raw = Buffer.from(await signed(MESSAGE));
    const servfail: DnsResolver = () => Promise.reject(Object.assign(new Error('queryTxt ESERVFAIL'), { code: 'ESERVFAIL' }));
    expect((await verifyDkimLocally(raw, signaturesOf(raw), servfail))[0]?.status).toBe('temperror');
    const never: DnsResolver = () => new Promise(() => {});
    const [slow] = await verifyDkimLocally(raw, signaturesOf(raw), never, { timeoutMs: 50 });
    expect(slow).toMatchObject({ status: 'temperror', info: expect.stringContaining('ETIMEOUT') as unknown });
    const throwsSync: DnsResolver = () => {
      throw new Error('boom');
    };
    expect((await verifyDkimLocally(raw, signaturesOf(raw), throwsSync))[0]?.status).toBe('temperror');
  });

  it('checks expiry against `now`', async () => {
    const raw = Buffer.from(await signed(MESSAGE, { expires: new Date(Date.now() + 3600_000) }));
    expect((await verifyDkimLocally(raw, signaturesOf(raw), resolver))[0]?.status).toBe('pass');
    const [late] = await verifyDkimLocally(raw, signaturesOf(raw), resolver, { now: new Date(Date.now() + 7200_000) });
    expect(late).toMatchObject({ status: 'neutral', info: expect.stringContaining('expired') as unknown });
  });

  it('reports each signature of a message signed twice', async () => {
    const once = await signed(MESSAGE);
    const twice = Buffer.from(await signed(once, { privateKeyPem: otherKey.privateKeyPem }));
    expect((await verifyDkimLocally(twice, signaturesOf(twice), resolver)).map((r) => r.status)).toEqual(['fail', 'pass']);
  });

  it('returns an empty list for an unsigned message and for garbage, without throwing', async () => {
    expect(await verifyDkimLocally(Buffer.from(MESSAGE), signaturesOf(Buffer.from(MESSAGE)), resolver)).toEqual([]);
    expect(await verifyDkimLocally(Buffer.from([0, 255, 254, 13, 10, 13, 10, 1, 2, 3]), [], resolver)).toEqual([]);
    expect(await verifyDkimLocally(Buffer.alloc(0), signaturesOf(Buffer.alloc(0)), resolver)).toEqual([]);
  });
});

describe('parseDkimSignatures', () => {
  const sig = (value: string) => parseDkimSignatures(parseHeaders(Buffer.from(`DKIM-Signature: ${value}\r\nFrom: a@b.test\r\n\r\n`)));

  it('reads d, s, b, h, a and l', () => {
    const [s] = sig('v=1; a=RSA-SHA256; c=relaxed/relaxed; d=Agent.Example.;\r\n h=From : Subject:\r\n  date:from; s=Sel1; l=42;\r\n bh=abc=; b=AbCd\r\n  Ef12 34==');
    expect(s).toEqual({ d: 'agent.example', s: 'Sel1', b: 'AbCdEf1234==', bodyLengthLimited: true, signedHeaders: ['from', 'subject', 'date', 'from'], algorithm: 'rsa-sha256' });
  });

  it('keeps the order of several signatures and says when l= is absent', () => {
    const fields = parseHeaders(Buffer.from('DKIM-Signature: v=1; a=rsa-sha256; d=a.example; s=s; h=from; bh=x; b=one\r\nDKIM-Signature: v=1; a=ed25519-sha256; d=b.example; s=t; h=from; bh=y; b=two;\r\n\r\n'));
    expect(parseDkimSignatures(fields).map((s) => [s.d, s.b, s.bodyLengthLimited, s.algorithm])).toEqual([
      ['a.example', 'one', false, 'rsa-sha256'],
      ['b.example', 'two', false, 'ed25519-sha256'],
    ]);
  });

  it.each([
    ['a repeated tag (RFC 6376 §3.2)', 'v=1; a=rsa-sha256; d=a.example; d=evil.test; s=s; h=from; bh=x; b=y'],
    ['a missing b=', 'v=1; a=rsa-sha256; d=a.example; s=s; h=from; bh=x'],
    ['a missing d=', 'v=1; a=rsa-sha256; s=s; h=from; bh=x; b=y'],
    ['an empty d=', 'v=1; a=rsa-sha256; d=; s=s; h=from; bh=x; b=y'],
    ['a missing v=', 'a=rsa-sha256; d=a.example; s=s; h=from; bh=x; b=y'],
    ['v=2', 'v=2; a=rsa-sha256; d=a.example; s=s; h=from; bh=x; b=y'],
    ['a piece without "="', 'v=1; a=rsa-sha256; d=a.example; s=s; h=from; bh=x; b=y; junk'],
    ['garbage', '\u0000\u00ff;;=='],
  ])('skips a signature with %s', (_name, value) => {
    expect(sig(value)).toEqual([]);
  });
});

describe('signaturesMatching', () => {
  const sigs = parseDkimSignatures(
    parseHeaders(Buffer.from('DKIM-Signature: v=1; a=rsa-sha256; d=agent.example; s=s1; h=from; bh=x; b=AbCdEf1234567890\r\nDKIM-Signature: v=1; a=rsa-sha256; d=other.example; s=s1; h=from; bh=x; b=AbCdEf12zzzz\r\n\r\n')),
  );

  it('matches on d= and a b= that starts with header.b', () => {
    expect(signaturesMatching(sigs, 'Agent.Example', 'AbCdEf12').map((s) => s.d)).toEqual(['agent.example']);
    expect(signaturesMatching(sigs, 'agent.example', 'AbCdEf1234567890')).toHaveLength(1);
  });

  it('matches nothing for another domain, a sibling or parent domain, a wrong or short header.b', () => {
    expect(signaturesMatching(sigs, 'sub.agent.example', 'AbCdEf12')).toEqual([]);
    expect(signaturesMatching(sigs, 'example', 'AbCdEf12')).toEqual([]);
    expect(signaturesMatching(sigs, 'agent.example', 'abcdef12')).toEqual([]);
    expect(signaturesMatching(sigs, 'agent.example', 'AbCd')).toEqual([]);
    expect(signaturesMatching(sigs, 'agent.example', null)).toEqual([]);
    expect(signaturesMatching(sigs, null, 'AbCdEf12')).toEqual([]);
  });
});

describe('makeResolver', () => {
  it('accepts ip and ip:port entries, and none (the system resolver)', () => {
    expect(typeof makeResolver([])).toBe('function');
    expect(typeof makeResolver(['127.0.0.1', '127.0.0.1:5353', '::1', '[::1]:5353'], { timeoutMs: 1000 })).toBe('function');
  });

  it.each(['localhost', 'dns.example:53', '127.0.0.1:0', '127.0.0.1:70000', '::1:53x', '', '1.2.3'])('refuses %j naming the entry', (entry) => {
    expect(() => makeResolver([entry])).toThrow(TypeError);
    expect(() => makeResolver([entry])).toThrow(`DNS server ${JSON.stringify(entry)} is not "ip" or "ip:port"`);
  });
});

describe('parseDkimSignatures on hostile sizes', () => {
  it('parses a huge whitespace-filled tag (a quadratic parser would hit the test timeout)', () => {
    const fields = parseHeaders(Buffer.from(`DKIM-Signature: v=1; a=rsa-sha256; d=a.example; s=s; h=from; bh=x; b=y${' '.repeat(1_000_000)}z\r\n\r\n`));
    expect(parseDkimSignatures(fields)[0]?.b).toBe('yz');
  });
});
