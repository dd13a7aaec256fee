/**
 * The stamp rule (src/uplink/stamp.ts, src/core/judge.ts `judgeStamp`; docs/architecture.md, "The
 * header stage") against the whole judge, on every message of both corpora (test/fixtures/corpus,
 * test/fixtures/providers, each under its own provider's profile): cut at every line of its
 * header block and at points inside lines, the prefix is never refused when the whole judge
 * applies the message, and when the whole judge refuses it at gates 5–7 the prefix's refusal is
 * the same verdict. The corpora's verdicts are those the corpus tests prove `intake` gives.
 */
import { describe, expect, it } from 'vitest';
import { judgeStamp, type JudgeRules, type JudgeStore } from '../../../src/core/judge.js';
import type { ProviderProfile } from '../../../src/uplink/border.js';
import { STAMP_PREFIX_BYTES } from '../../../src/uplink/gates.js';
import { headerEnd } from '../../../src/uplink/raw-headers.js';
import { isApplied, type Verdict } from '../../../src/uplink/verdicts.js';
import { corpusAgent, loadManifest, profileOf, readMessage } from '../../helpers/corpus.js';
import { loadProviderManifest, providerProfile, readProviderMessage } from '../../helpers/provider-corpus.js';

const manifest = loadManifest();
const agents = [corpusAgent(manifest)];
/** A ledger that holds no authenticated signature (gate 1 by signature never matches). */
const empty: JudgeStore = { seenDigest: () => false, authenticatedWith: () => undefined, task: () => undefined, messageIdApplied: () => false };
/** A ledger that holds the digest of every prefix (each is a copy of mail recorded before). */
const seenAll: JudgeStore = { ...empty, seenDigest: () => true };
const rulesFor = (profile: ProviderProfile): JudgeRules => ({ agents, profile, verifyDkim: true, dateSkewMs: manifest.dateSkewMs, maxMessageBytes: 10 * 1024 * 1024 });
/** The verdicts of gates 5–7: a stamp refusal must name the same one when the whole judge gives one of these. */
const STAMP_GATES = new Set<Verdict>(['auth:no-border', 'auth:no-trusted-results', 'auth:dmarc-fail', 'auth:dkim-unaligned', 'auth:dkim-unverified']);

/** Every cut of the header block: after each line break, and 7 bytes into each line. */
function cuts(raw: Buffer): number[] {
  const end = headerEnd(raw);
  const out: number[] = [];
  for (let i = raw.indexOf(0x0a); i >= 0 && i < end - 2; i = raw.indexOf(0x0a, i + 1)) out.push(i + 1, Math.min(i + 8, end - 2));
  return out;
}

const cases = [
  ...manifest.messages.map((m) => ({ name: m.file, raw: readMessage(m.file), profile: profileOf(manifest), verdict: m.expect.verdict })),
  ...loadProviderManifest().messages.map((m) => ({ name: m.file, raw: readProviderMessage(m.file), profile: providerProfile(loadProviderManifest(), m.provider), verdict: m.expect.verdict })),
];

describe('the stamp rule agrees with the whole judge on every prefix of every corpus message', () => {
  const seen = { prefixes: 0, refused: 0, genuine: 0 };
  for (const c of cases) {
    it(c.name, () => {
      const rules = rulesFor(c.profile);
      for (const n of cuts(c.raw)) {
        const d = judgeStamp({ raw: c.raw.subarray(0, n), size: c.raw.length }, rules, empty);
        // Gate 1 by the prefix's digest is asked only where the stamp refuses: a copy is then a
        // duplicate, and a prefix the stamp lets through is never refused by its digest.
        const copy = judgeStamp({ raw: c.raw.subarray(0, n), size: c.raw.length }, rules, seenAll);
        expect(copy?.verdict ?? null, `${c.name} at ${n} bytes, a copy`).toBe(d ? 'duplicate' : null);
        seen.prefixes++;
        if (isApplied(c.verdict) || c.verdict === 'late:recorded') seen.genuine++;
        if (!d) continue;
        seen.refused++;
        expect(isApplied(c.verdict) || c.verdict === 'late:recorded', `${c.name} refused on ${n} bytes (${d.reason}), the whole judge gives ${c.verdict}`).toBe(false);
        if (STAMP_GATES.has(c.verdict)) expect(d.verdict, `${c.name} at ${n} bytes: ${d.reason}`).toBe(c.verdict);
      }
    });
  }
  it('judged prefixes of genuine mail and refused prefixes of forgeries', () => {
    expect(seen.genuine).toBeGreaterThan(500);
    expect(seen.refused).toBeGreaterThan(200);
  });
});

describe('the stamp rule', () => {
  const rules = rulesFor(profileOf(manifest));
  const forged = (stamp: string): Buffer =>
    Buffer.from(`${stamp}X-Sender-Field: x\r\nFrom: ${agents[0]!.address}\r\nSubject: Re: [${agents[0]!.tag}:${manifest.liveTaskId}] x\r\n${'X-Pad: p\r\n'.repeat(3000)}`);
  const received = 'Received: from mx.evil.example (mx.evil.example [203.0.113.66])\r\n\tby mx1.messagingengine.com (Postfix) with ESMTPS id X1\r\n\tfor <me@bridge.test>; Tue, 01 Dec 2026 10:00:00 +0000\r\n';
  const ar = (results: string): string => `Authentication-Results: mx1.messagingengine.com;\r\n    ${results}\r\n`;
  const judge = (raw: Buffer) => judgeStamp({ raw: raw.subarray(0, STAMP_PREFIX_BYTES), size: raw.length }, rules, empty);

  it('runs gate 5, then 6, then 7, as the whole judge does', () => {
    expect(judge(forged(`${ar('dkim=none; dmarc=fail header.from=agent.example')}${received}`))?.verdict).toBe('auth:dmarc-fail');
    expect(judge(forged(`${ar('dkim=fail header.d=agent.example; dmarc=none')}${received}`))?.verdict).toBe('auth:dkim-unaligned');
    expect(judge(forged(`X-Other: 1\r\n${received}`))?.verdict).toBe('auth:no-trusted-results');
    // A forged A-R below the border is not the provider's: still no trusted results.
    expect(judge(forged(`${received}${ar('dkim=pass header.d=agent.example header.b=AAAAAAAA; dmarc=pass')}`))?.verdict).toBe('auth:no-trusted-results');
  });

  it('names the task its prefix shows, keeps the prefix as evidence, and says it read the stamp', () => {
    const d = judge(forged(`${ar('dkim=none; dmarc=fail header.from=agent.example')}${received}`))!;
    expect(d).toMatchObject({ kind: 'refuse', evidence: 'head', tag: { taskId: manifest.liveTaskId } });
    expect(d.reason).toContain("read on the provider's stamp");
  });

  it('never refuses a stamp with an aligned pass, nor a prefix that does not reach the border', () => {
    expect(judge(forged(`${ar('dkim=pass header.d=agent.example header.b=AAAAAAAA; dmarc=pass header.from=agent.example')}${received}`))).toBeNull();
    expect(judge(forged(`X-Big: ${'b'.repeat(STAMP_PREFIX_BYTES)}\r\n${received}`))).toBeNull();
    // The border's last continuation line cut off: the field may go on, so it is not read.
    const cut = Buffer.from(`${ar('dkim=none; dmarc=fail')}${received}`);
    expect(judgeStamp({ raw: cut.subarray(0, cut.length - 3), size: 1_000_000 }, rules, empty)).toBeNull();
  });

  describe('a prefix that does not reach the border but already shows more than 8 DKIM signatures is refused by gate 3 (attack review 6, F4)', () => {
    /** One dkim result per DKIM-Signature, as the provider lists them: `n` of them, folded as a provider folds. */
    const perSignature = (n: number): string => Array.from({ length: n }, (_, i) => `dkim=fail (signature verification failed) header.d=d${i}.evil.example header.i=@d${i}.evil.example header.b=AAAA${String(i).padStart(4, '0')} header.s=s${i}`).join(';\r\n    ');
    const dmarcFail = 'dmarc=fail (p=reject) header.from=agent.example';

    it("the provider's Authentication-Results cut short by the prefix, listing 200 signatures", () => {
      const raw = forged(`${ar(`${perSignature(200)};\r\n    ${dmarcFail}`)}${received}`);
      expect(raw.indexOf('Received:')).toBeGreaterThan(STAMP_PREFIX_BYTES);
      const d = judge(raw)!;
      expect(d.verdict).toBe('auth:duplicate-header');
      expect(d.reason).toMatch(/^gate 3: at least (\d+) DKIM-Signature headers \(the provider's Authentication-Results #0, cut short by the prefix, lists \1 dkim results, one per signature\); at most 8 are verified \(read on the provider's stamp: 0 whole fields in the first 16384 bytes/);
    });

    it('its ARC-Authentication-Results (Fastmail, Gmail write them above the border too), under whole fields of the stamp', () => {
      const arc = `ARC-Authentication-Results: i=1; mx1.messagingengine.com;\r\n    ${perSignature(200)};\r\n    ${dmarcFail}\r\n`;
      const d = judge(forged(`Received: from mailmx.phl.internal (localhost [127.0.0.1])\r\n\tby mx1.messagingengine.com; d\r\nARC-Seal: i=1; cv=none\r\n${arc}${ar(dmarcFail)}${received}`))!;
      expect(d.verdict).toBe('auth:duplicate-header');
      expect(d.reason).toContain("the provider's ARC-Authentication-Results #2, cut short by the prefix, lists");
    });

    it('a whole field of the stamp listing 9 signatures; 9 DKIM-Signature fields among the whole fields', () => {
      const nine = `${ar(`${perSignature(9)}; ${dmarcFail}`)}X-Big: ${'b'.repeat(STAMP_PREFIX_BYTES)}\r\n${received}`;
      expect(judge(forged(nine))?.reason).toMatch(/^gate 3: at least 9 DKIM-Signature headers \(the provider's Authentication-Results #0 lists 9 dkim results/);
      const sigs = Array.from({ length: 9 }, (_, i) => `DKIM-Signature: v=1; d=d${i}.example; s=s; h=from; bh=x; b=${i}\r\n`).join('');
      expect(judge(forged(`${sigs}X-Big: ${'b'.repeat(STAMP_PREFIX_BYTES)}\r\n${received}`))?.reason).toMatch(/^gate 3: at least 9 DKIM-Signature headers; at most 8 are verified/);
    });

    it('never: 8 signatures, results of other methods, the same result listed twice, or an A-R of another authserv-id', () => {
      const long = (results: string) => forged(`${ar(results)}X-Big: ${'b'.repeat(STAMP_PREFIX_BYTES)}\r\n${received}`);
      expect(judge(long(`${perSignature(8)}; ${dmarcFail}`))).toBeNull();
      expect(judge(long(`${Array.from({ length: 400 }, (_, i) => `x-note${i}=pass`).join('; ')}; ${dmarcFail}`))).toBeNull();
      expect(judge(long(`${Array(20).fill(perSignature(1)).join('; ')}; ${dmarcFail}`))).toBeNull();
      const other = `Authentication-Results: mx.other.example;\r\n    ${perSignature(200)}\r\n${received}`;
      expect(judge(forged(other))).toBeNull();
    });
  });
});
