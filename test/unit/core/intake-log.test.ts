/**
 * What a flood of mail costs the log (src/core/intake.ts, logVerdict): the corpus's messages
 * taken in by `intake` with a logger that keeps every line. Refusals of mail that did not
 * authenticate — which anyone can send — are one warn line per verdict a minute (on the injected
 * clock), the rest debug lines counted in the next warn line; a refusal of mail that carries the
 * agent's signature, and an applied reply, always get a line of their own.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/log.js';
import { corpusAgent, loadManifest, loadZone, profileOf, readMessage, zoneResolver } from '../../helpers/corpus.js';
import { corpusStore } from '../../helpers/corpus-store.js';

const manifest = loadManifest();
const WARN = 40;
const DEBUG = 20;

function capture(): { log: ReturnType<typeof createLogger>; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger('debug', sink), lines };
}

describe('the log under a flood of mail', () => {
  it('one warn line per unauthenticated verdict a minute, the rest counted; authenticated refusals and applied replies each get their own', async () => {
    const { log, lines } = capture();
    const store = corpusStore(manifest, { agents: [corpusAgent(manifest)], profile: profileOf(manifest), resolver: zoneResolver(loadZone().records), log });
    const judgedAt = Date.parse(manifest.judgedAt);
    const unaligned = manifest.messages.filter((m) => m.expect.verdict === 'auth:dkim-unaligned' && !m.task && !m.precededBy).map((m) => m.file);
    expect(unaligned.length).toBeGreaterThanOrEqual(10);
    try {
      const verdicts: string[] = [];
      const take = async (file: string, now: number): Promise<void> => {
        const out = await store.take(readMessage(file), { now });
        verdicts.push(out.kind === 'recorded' ? out.verdict : out.kind);
      };
      for (const file of unaligned.slice(0, -1)) await take(file, judgedAt);
      await take('86-wrong-token.eml', judgedAt + 1);
      await take('01-genuine-done.eml', judgedAt + 2);
      await take('22-agent-resends-with-new-message-id.eml', judgedAt + 3);
      await take(unaligned.at(-1)!, judgedAt + 60_000);
      expect(verdicts).toEqual([...unaligned.slice(0, -1).map(() => 'auth:dkim-unaligned'), 'bad-token', 'applied:done', 'bad-token', 'auth:dkim-unaligned']);

      const at = (level: number, verdict: string) => lines.filter((l) => l.level === level && l.verdict === verdict);
      const flood = at(WARN, 'auth:dkim-unaligned');
      expect(flood).toHaveLength(2);
      expect(flood[0]).not.toHaveProperty('suppressedSinceLast');
      expect(flood[1]).toMatchObject({ suppressedSinceLast: unaligned.length - 2 });
      expect(at(DEBUG, 'auth:dkim-unaligned')).toHaveLength(unaligned.length - 2);
      expect(at(WARN, 'bad-token')).toHaveLength(2);
      expect(lines.filter((l) => l.msg === 'reply applied')).toHaveLength(1);
      // Every message has its ledger row, logged or not.
      expect(store.store.ledger.query({ verdict: 'auth:dkim-unaligned', since: judgedAt - 86_400_000, limit: 100 })).toHaveLength(unaligned.length);
    } finally {
      store.close();
    }
  });
});
