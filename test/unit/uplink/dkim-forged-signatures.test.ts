/**
 * Gate 7 against DKIM-Signature fields that cannot stand for an agent (docs/architecture.md, "The
 * gates", gate 7): a forger resends one agent-signed mail with extra signatures of its own domain,
 * correct `bh=`, selectors spelled with a fullwidth 'ｋ' (U+FF4B: node:url maps it to 'k', mailauth
 * to the A-label `xn--…`) or plainly, and a name server that never answers. Only the aligned
 * candidates' keys are looked up; the others cost no DNS query, so neither the copies nor a genuine
 * reply behind them wait for a timeout. Query counts and verdicts are asserted, never times.
 */
import { generateKeyPairSync } from 'node:crypto';
import { dkimSign, type DKIMSignOptions } from 'mailauth';
import { describe, expect, it } from 'vitest';
import { parseDkimSignatures, verifyDkimLocally, type DnsResolver } from '../../../src/uplink/dkim.js';
import { withoutOtherSignatures } from '../../../src/uplink/dkim-fields.js';
import { dkimVerifies } from '../../../src/uplink/gates.js';
import { OFFLOAD_MIN_BYTES, type BudgetTimer } from '../../../src/uplink/offload.js';
import { parseHeaders } from '../../../src/uplink/raw-headers.js';
import { corpusAgent, loadManifest, loadZone, profileOf, readMessage, zoneResolver } from '../../helpers/corpus.js';
import { corpusStore } from '../../helpers/corpus-store.js';

const manifest = loadManifest();
const FORGER = /evil\.example$/i;
const forgerKey = generateKeyPairSync('rsa', { modulusLength: 1024, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } }).privateKey;

/**
 * `mail` with `n` DKIM-Signature fields of dN.evil.example inserted above the agent's own, each with
 * a correct bh= over the mail as the agent sent it; odd ones with a fullwidth selector.
 */
async function withForgedSignatures(mail: Buffer, n: number): Promise<Buffer> {
  const text = mail.toString('latin1');
  const at = text.indexOf('DKIM-Signature:');
  const sent = Buffer.from(text.slice(at), 'latin1');
  let fields = '';
  for (let i = 1; i <= n; i++) {
    const signed = await dkimSign(sent, {
      canonicalization: 'relaxed/relaxed',
      algorithm: 'rsa-sha256',
      headerList: 'from:subject:date:message-id',
      signatureData: [{ signingDomain: `d${i}.evil.example`, selector: `k${i}`, privateKey: forgerKey }],
    } as unknown as DKIMSignOptions);
    fields += i % 2 ? signed.signatures.replace(/s=k(\d+);/, 's=\uFF4B$1;') : signed.signatures;
  }
  return Buffer.concat([Buffer.from(text.slice(0, at), 'latin1'), Buffer.from(fields, 'utf8'), sent]);
}

/**
 * Unsigned fields added on top of `mail`, each copy different (a new digest), to exactly `bytes` in
 * all when asked (the header block stays under its 256 KiB cap while the message reaches the worker).
 */
function copy(mail: Buffer, i: number, bytes = 0): Buffer {
  const top = `X-Copy: ${i}\r\n`;
  const room = bytes - mail.length - top.length;
  const pad = room > 0 ? `X-Pad: ${'p'.repeat(room - 9)}\r\n` : '';
  return Buffer.concat([Buffer.from(top + pad), mail]);
}

/**
 * The corpus zone for the agent's names; a name server that never answers for the forger's
 * (its queries are counted and held until `release`; after that they fail at once).
 */
function dnsStub(): { resolver: DnsResolver; asked: string[]; forgerAsked: Promise<'the forger domain was asked'>; release(): void } {
  const zone = zoneResolver(loadZone().records);
  const asked: string[] = [];
  const held: (() => void)[] = [];
  let released = false;
  let told: () => void = () => undefined;
  const forgerAsked = new Promise<'the forger domain was asked'>((resolve) => (told = () => resolve('the forger domain was asked')));
  const timedOut = (name: string): Error => Object.assign(new Error(`queryTxt ETIMEOUT ${name}`), { code: 'ETIMEOUT' });
  const resolver: DnsResolver = (name, rrtype) => {
    asked.push(name);
    if (!FORGER.test(name)) return zone(name, rrtype);
    told();
    if (released) return Promise.reject(timedOut(name));
    return new Promise((_, reject) => held.push(() => reject(timedOut(name))));
  };
  return { resolver, asked, forgerAsked, release: () => ((released = true), held.splice(0).forEach((f) => f())) };
}

describe('gate 7: DKIM-Signature fields that cannot stand for an agent', () => {
  it('verifies only the candidates: the forged signatures, fullwidth selectors or not, cost no DNS query and are not verified (was: 7 prefetched and 4 more asked one after another)', async () => {
    const dns = dnsStub();
    try {
      const raw = await withForgedSignatures(readMessage('28-unknown-task.eml'), 7);
      const sigs = parseDkimSignatures(parseHeaders(raw));
      expect(sigs).toHaveLength(8);
      const agents = sigs.filter((s) => s.d === manifest.agent.dkimDomain);
      const results = await Promise.race([verifyDkimLocally(raw, agents, dns.resolver), dns.forgerAsked]);
      expect(results).not.toBe('the forger domain was asked');
      expect(dns.asked).toEqual(['grok2025._domainkey.agent.example']);
      // The forged fields are not shown to the verifier: only the candidate's result comes back.
      expect((results as Exclude<typeof results, string>).map((r) => [r.d, r.status])).toEqual([['agent.example', 'pass']]);
    } finally {
      dns.release();
    }
  });

  it('judges copies, one of them past 256 KiB on the worker, with no lookup for the forged signatures, and applies the genuine reply behind them in the same run (was: every copy waited on the forger\'s name server)', async () => {
    const dns = dnsStub();
    const store = corpusStore(manifest, { agents: [corpusAgent(manifest)], profile: profileOf(manifest), resolver: dns.resolver });
    try {
      const replay = await withForgedSignatures(readMessage('28-unknown-task.eml'), 7);
      const copies = [copy(replay, 0, OFFLOAD_MIN_BYTES), copy(replay, 1), copy(replay, 2, OFFLOAD_MIN_BYTES)];
      expect(copies[0]!.length).toBe(OFFLOAD_MIN_BYTES);
      const verdicts: string[] = [];
      for (const raw of [...copies, readMessage('01-genuine-done.eml')]) {
        const out = await Promise.race([store.take(raw), dns.forgerAsked]);
        if (typeof out === 'string') throw new Error(out);
        verdicts.push(out.kind === 'recorded' ? out.verdict : out.kind);
      }
      // Each copy passes gates 3–7 on its header block and is refused by gate 8's task rule there,
      // before local verification (attack review 6, F2): no copy is verified, no forger's key asked.
      expect(verdicts).toEqual(['unknown-task', 'unknown-task', 'unknown-task', 'applied:done']);
      expect(dns.asked.filter((n) => FORGER.test(n))).toEqual([]);
      expect(dns.asked.every((n) => n === 'grok2025._domainkey.agent.example')).toBe(true);
    } finally {
      dns.release();
      store.close();
    }
  });

  it('keeps DNS out of the worker\'s time budget: a large message\'s verification asks for no key while it runs', async () => {
    const dns = dnsStub();
    // The budget runs out the moment a key is asked for while the worker verifies.
    let running: (() => void) | null = null;
    const budget: BudgetTimer = (_ms, expire) => {
      running = expire;
      return () => {
        running = null;
      };
    };
    const counted: DnsResolver = (name, rrtype) => {
      running?.();
      return dns.resolver(name, rrtype);
    };
    try {
      const raw = copy(await withForgedSignatures(readMessage('01-genuine-done.eml'), 7), 0, OFFLOAD_MIN_BYTES);
      const agents = parseDkimSignatures(parseHeaders(raw)).filter((s) => s.d === manifest.agent.dkimDomain);
      const results = await Promise.race([verifyDkimLocally(raw, agents, counted, { timer: budget }), dns.forgerAsked]);
      if (typeof results === 'string') throw new Error(results);
      expect(results.find((r) => r.d === 'agent.example')).toMatchObject({ status: 'pass' });
      expect(results.some((r) => r.overBudget)).toBe(false);
    } finally {
      dns.release();
    }
  });

  it('does not look up a candidate\'s key whose name mailauth would spell otherwise (a U-label selector): a missing key at once, final', async () => {
    const dns = dnsStub();
    const raw = Buffer.from(readMessage('01-genuine-done.eml').toString('latin1').replace('s=grok2025;', 's=grok2025\uFF4B;'), 'utf8');
    const [sig] = parseDkimSignatures(parseHeaders(raw));
    expect(sig?.s).toBe('grok2025\uFF4B');
    const [r] = await verifyDkimLocally(raw, [sig!], dns.resolver);
    expect(dns.asked).toEqual([]);
    expect(r).toMatchObject({ status: 'neutral', info: expect.stringContaining('no key') as unknown });
  });

  it('does not verify with an RSA key of an unusual public exponent or over 4096 bits (RFC 8301 §3.2)', async () => {
    const raw = readMessage('01-genuine-done.eml');
    const [sig] = parseDkimSignatures(parseHeaders(raw));
    for (const odd of [{ modulusLength: 2048, publicExponent: 0x10000001 }, { modulusLength: 4104 }]) {
      const spki = generateKeyPairSync('rsa', { ...odd, publicKeyEncoding: { type: 'spki', format: 'der' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } }).publicKey;
      const resolver: DnsResolver = () => Promise.resolve([[`v=DKIM1; k=rsa; p=${spki.toString('base64')}`]]);
      const [r] = await verifyDkimLocally(raw, [sig!], resolver);
      expect(r).toMatchObject({ status: 'neutral', info: expect.stringContaining('invalid public key') as unknown });
    }
  });

  it('says a message that ran over its time budget was not verified, naming no selector (was: the agent\'s, neutral)', async () => {
    const dns = dnsStub();
    const spentAtOnce: BudgetTimer = (_ms, expire) => {
      queueMicrotask(expire);
      return () => undefined;
    };
    const raw = copy(readMessage('01-genuine-done.eml'), 0, OFFLOAD_MIN_BYTES);
    const agents = parseDkimSignatures(parseHeaders(raw));
    const refusal = await dkimVerifies(raw, agents, corpusAgent(manifest), dns.resolver, null, { budgetMs: 1, timer: spentAtOnce });
    expect(refusal).toMatchObject({ verdict: 'auth:dkim-unverified', temporary: false, reason: expect.stringMatching(/^gate 7: the message was not verified: local DKIM verification not done within the 0\.001 s time budget .*; no signature was judged$/) as unknown });
    expect((refusal as { reason: string }).reason).not.toContain('s=grok2025');
  });

  it('reads every field when a candidate signs DKIM-Signature fields (removing one would change what it signed), still asking for no other key', async () => {
    const dns = dnsStub();
    const own = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'der' } });
    const served: DnsResolver = (name, rrtype) => (name === 'a1._domainkey.agent.example' ? Promise.resolve([[`v=DKIM1; k=rsa; p=${own.publicKey.toString('base64')}`]]) : dns.resolver(name, rrtype));
    try {
      // The agent signed a mail that already held the forged fields, its h= naming two of them.
      const forged = await withForgedSignatures(readMessage('28-unknown-task.eml'), 2);
      const below = forged.subarray(forged.indexOf('DKIM-Signature:'));
      const { signatures } = await dkimSign(below, {
        canonicalization: 'relaxed/relaxed',
        algorithm: 'rsa-sha256',
        headerList: 'from:subject:date:message-id:dkim-signature:dkim-signature',
        signatureData: [{ signingDomain: 'agent.example', selector: 'a1', privateKey: own.privateKey }],
      } as unknown as DKIMSignOptions);
      const raw = Buffer.concat([Buffer.from(signatures), below]);
      const mine = parseDkimSignatures(parseHeaders(raw)).filter((s) => s.s === 'a1');
      expect(mine[0]?.signedHeaders).toContain('dkim-signature');
      const results = await Promise.race([verifyDkimLocally(raw, mine, served), dns.forgerAsked]);
      if (typeof results === 'string') throw new Error(results);
      expect(results.map((r) => [r.s, r.status])).toEqual([['a1', 'pass']]);
    } finally {
      dns.release();
    }
  });

  it('shows the verifier the message without the other DKIM-Signature fields, every other byte as it was', async () => {
    const original = readMessage('28-unknown-task.eml');
    const raw = await withForgedSignatures(original, 7);
    const mine = parseDkimSignatures(parseHeaders(raw)).filter((s) => s.d === manifest.agent.dkimDomain);
    expect(withoutOtherSignatures(raw, mine).equals(original)).toBe(true);
    expect(withoutOtherSignatures(original, mine)).toBe(original); // nothing to remove: the same buffer
  });
});
