import { expect, vi } from 'vitest';
import { runPrune } from '../../src/cli/prune.js';
import type { PruneCounts } from '../../src/store/prune.js';

const DAY = 86_400_000;

/**
 * `a2a-mailbridge prune --older-than 1 --json [--dry-run]` on this config's store, run as if two
 * days from now (every finished task goes, every ledger row is older than the cut): its counts.
 */
export async function pruneAll(configFile: string, dryRun: boolean): Promise<PruneCounts> {
  const out: string[] = [];
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => (out.push(String(chunk)), true));
  try {
    expect(await runPrune({ configFile }, { olderThan: '1', dryRun, json: true }, Date.now() + 2 * DAY)).toBe(0);
  } finally {
    write.mockRestore();
  }
  const { dryRun: _, cut: __, ...counts } = JSON.parse(out.join('')) as PruneCounts & { dryRun: boolean; cut: string };
  return counts;
}
