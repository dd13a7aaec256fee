/**
 * The MIME parser is loaded at the first reply judged (docs/architecture.md, "Start-up and
 * memory"). If it cannot be loaded then — its package missing or being replaced under a running
 * bridge — nothing of the body was read: a genuine reply is deferred to the next check (nothing
 * recorded), never refused as a reply without a token. The one module mocked is mailparser's
 * loading; the judge, DKIM (against the corpus zone) and the store are real.
 */
import { describe, expect, it, vi } from 'vitest';
import { corpusAgent, loadManifest, loadZone, profileOf, readMessage, zoneResolver } from '../../helpers/corpus.js';
import { corpusStore } from '../../helpers/corpus-store.js';

const loading = vi.hoisted(() => ({ fails: true }));
vi.mock('mailparser', async (original) => {
  if (loading.fails) throw new Error("Cannot find package 'mailparser'");
  return original();
});

const manifest = loadManifest();

describe('a reply judged while the MIME parser cannot be loaded', () => {
  it('is deferred with the reason, nothing recorded, and applied once the parser loads', async () => {
    const store = corpusStore(manifest, { agents: [corpusAgent(manifest)], profile: profileOf(manifest), resolver: zoneResolver(loadZone().records) });
    const now = Date.parse(manifest.judgedAt);
    const rowsBefore = store.store.ledger.query({ limit: 100 }).length;
    try {
      const first = await store.take(readMessage('01-genuine-done.eml'), { now });
      expect(first.kind).toBe('deferred');
      expect(first).toMatchObject({ cause: 'parser' });
      expect(first.kind === 'deferred' && first.reason).toMatch(/^the MIME parser \(mailparser\) could not be loaded/);
      expect(store.store.ledger.query({ limit: 100 })).toHaveLength(rowsBefore);

      loading.fails = false;
      const again = await store.take(readMessage('01-genuine-done.eml'), { now: now + 1 });
      expect(again).toMatchObject({ kind: 'recorded', verdict: 'applied:done' });
    } finally {
      store.close();
    }
  });
});
