import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { listFolder } from '../../../src/uplink/maildir-files.js';

const dir = mkdtempSync(join(tmpdir(), 'mb-shared-names-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Attack review 9: 20,000 files sharing one unique name (the part before ':') took listFolder 20 s,
// the event loop stalled throughout — each file copied the list of those before it. The unit
// project's 30 s timeout is the bound: linear, this takes about a second; quadratic, minutes.
describe('listFolder with many files sharing one unique name', () => {
  it('keys 40,000 such files apart, each once, in one pass', async () => {
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(dir, sub));
    const N = 40_000;
    for (let i = 0; i < N; i++) writeFileSync(join(dir, i % 2 ? 'cur' : 'new', `X:${i}`), '');
    const listing = await listFolder(dir);
    expect(listing.size).toBe(N);
    expect(new Set([...listing.values()].map((e) => `${e.sub}/${String(e.name)}`)).size).toBe(N);
    expect(listing.has('X')).toBe(true);
  });
});
