/**
 * Every message of the provider corpus (test/fixtures/providers/, written by
 * generate-provider-corpus.ts) taken in through `intake` — the judge, then the ledger row — with
 * the profile of its own preset — genuine provider-shaped replies promote, every forgery aimed at
 * that provider's quirks is refused. The same files go through the real mailbox path on Dovecot
 * and a Maildir in test/integration/uplink/provider-corpus.test.ts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { isApplied } from '../../../src/uplink/verdicts.js';
import { corpusAgent, loadManifest, loadZone, zoneResolver } from '../../helpers/corpus.js';
import { judgeInStore, loadProviderManifest, providerProfile, readProviderMessage } from '../../helpers/provider-corpus.js';

const manifest = loadProviderManifest();
const agents = [corpusAgent(loadManifest())];
const resolver = zoneResolver(loadZone().records);
const outcomes: { provider: string; file: string; expected: string; actual: string }[] = [];

describe('provider corpus', () => {
  it('has genuine and forged mail for every preset but Fastmail (its own corpus is test/fixtures/corpus)', () => {
    for (const p of ['gmail', 'outlook', 'icloud', 'yahoo', 'self-hosted']) {
      const mine = manifest.messages.filter((m) => m.provider === p);
      expect(mine.filter((m) => isApplied(m.expect.verdict)).length, p).toBeGreaterThanOrEqual(2);
      expect(mine.filter((m) => !isApplied(m.expect.verdict)).length, p).toBeGreaterThanOrEqual(4);
    }
  });

  for (const m of manifest.messages) {
    it(m.file, async () => {
      const out = await judgeInStore(readProviderMessage(m.file), { agents, profile: providerProfile(manifest, m.provider), resolver, verifyDkim: true });
      outcomes.push({ provider: m.provider, file: m.file, expected: m.expect.verdict, actual: out.verdict });
      expect({ verdict: out.verdict, reason: out.reason }).toEqual({
        verdict: m.expect.verdict,
        reason: m.expect.reason === undefined ? out.reason : (expect.stringContaining(m.expect.reason) as unknown as string),
      });
    });
  }

  it('refuses every genuine reply of one provider under another provider\'s preset (no preset trusts another\'s stamp)', async () => {
    const genuine = manifest.messages.filter((m) => isApplied(m.expect.verdict));
    for (const m of genuine) {
      for (const other of ['gmail', 'outlook', 'icloud', 'yahoo', 'self-hosted'] as const) {
        if (other === m.provider) continue;
        const out = await judgeInStore(readProviderMessage(m.file), { agents, profile: providerProfile(manifest, other), resolver, verifyDkim: true });
        expect(isApplied(out.verdict), `${m.file} under ${other}: ${out.reason}`).toBe(false);
      }
    }
  });

  it('refuses every forgery on the border rule alone, without local DKIM verification (presets whose results name header.b)', async () => {
    const forged = manifest.messages.filter((m) => !isApplied(m.expect.verdict) && ['gmail', 'icloud', 'self-hosted'].includes(m.provider));
    expect(forged.length).toBeGreaterThanOrEqual(12);
    for (const m of forged) {
      const out = await judgeInStore(readProviderMessage(m.file), { agents, profile: providerProfile(manifest, m.provider), resolver, verifyDkim: false });
      expect(out.verdict, `${m.file}: ${out.reason}`).toBe(m.expect.verdict);
    }
  });

  afterAll(() => {
    const rows = new Map<string, Map<string, number>>();
    for (const o of outcomes) {
      const row = rows.get(o.provider) ?? new Map<string, number>();
      row.set(o.actual, (row.get(o.actual) ?? 0) + 1);
      rows.set(o.provider, row);
    }
    const falsePromotions = outcomes.filter((o) => isApplied(o.actual as never) && o.actual !== o.expected);
    const falseRefusals = outcomes.filter((o) => isApplied(o.expected as never) && o.actual !== o.expected);
    console.log(
      [
        `provider corpus: ${outcomes.length} messages judged`,
        ...[...rows].map(([p, row]) => `  ${p.padEnd(12)} ${[...row].map(([v, n]) => `${v} ${n}`).join(', ')}`),
        `false promotions: ${falsePromotions.length}; false refusals: ${falseRefusals.length}`,
      ].join('\n'),
    );
  });
});
