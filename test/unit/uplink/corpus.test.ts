/**
 * Issue 3: the complete gate stack, proven on the corpus of attack mail in
 * `test/fixtures/corpus/` (written by `test/fixtures/generate-corpus.ts`; its manifest says what
 * each message models and the verdict BRIEF §5 requires). Each message runs through the pure
 * stack — `identify` → `authenticate` (local DKIM verification on, keys from `zone.json`) →
 * `parseReply` → `judgeReply` — against a live task; a sequence case first replays the messages
 * it names against the same store model. Any difference is a false promotion or a false refusal.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { corpusAgent, loadManifest, loadZone, profileOf, readMessage, zoneResolver } from '../../helpers/corpus.js';
import { runStack, storeModel, type StackContext } from '../../helpers/gate-stack.js';
import { isApplied, type Verdict } from '../../../src/uplink/verdicts.js';

const manifest = loadManifest();
const ctx: StackContext = {
  agents: [corpusAgent(manifest)],
  profile: profileOf(manifest),
  resolver: zoneResolver(loadZone().records),
  verifyDkim: true,
};

const counts = new Map<Verdict, number>();
const outcomes: { file: string; expected: Verdict; actual: Verdict }[] = [];

describe('attack-mail corpus (issue 3)', () => {
  it('has at least 40 messages against one live task', () => {
    expect(manifest.messages.length).toBeGreaterThanOrEqual(40);
    expect(manifest.tasks.find((t) => t.id === manifest.liveTaskId)?.state).toBe('WORKING');
  });

  for (const m of manifest.messages) {
    it(m.file, async () => {
      const store = storeModel(manifest, m.task);
      for (const before of m.precededBy ?? []) await runStack(readMessage(before), ctx, store);
      const out = await runStack(readMessage(m.file), ctx, store);
      counts.set(m.expect.verdict, (counts.get(m.expect.verdict) ?? 0) + 1);
      outcomes.push({ file: m.file, expected: m.expect.verdict, actual: out.verdict });
      expect({ verdict: out.verdict, reason: out.reason }).toEqual({
        verdict: m.expect.verdict,
        reason: m.expect.reason === undefined ? out.reason : expect.stringContaining(m.expect.reason) as unknown,
      });
      for (const part of m.answerIncludes ?? []) expect(out.reply?.answer).toContain(part);
    });
  }

  afterAll(() => {
    const falsePromotions = outcomes.filter((o) => isApplied(o.actual) && o.actual !== o.expected);
    const falseRefusals = outcomes.filter((o) => isApplied(o.expected) && o.actual !== o.expected);
    const other = outcomes.filter((o) => o.actual !== o.expected && !falsePromotions.includes(o) && !falseRefusals.includes(o));
    const table = [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([v, n]) => `  ${v.padEnd(26)} ${n}`);
    console.log(
      [
        `corpus: ${outcomes.length} messages judged; expected verdicts:`,
        ...table,
        `false promotions: ${falsePromotions.length}${falsePromotions.map((o) => `\n  ${o.file}: ${o.actual}`).join('')}`,
        `false refusals: ${falseRefusals.length}${falseRefusals.map((o) => `\n  ${o.file}: ${o.actual}`).join('')}`,
        `other mismatches: ${other.length}${other.map((o) => `\n  ${o.file}: ${o.actual}, expected ${o.expected}`).join('')}`,
      ].join('\n'),
    );
  });
});
