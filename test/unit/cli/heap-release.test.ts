import { describe, expect, it } from 'vitest';
import { IdleRelease, releaseHeap } from '../../../src/cli/heap-release.js';

describe('IdleRelease: when serve gives memory back after calls', () => {
  it('releases once, at the first tick that finds no call since the one before', () => {
    let releases = 0;
    const idle = new IdleRelease(() => releases++);
    idle.tick(0); // quiet since start: the start-up release already ran
    expect(releases).toBe(0);
    idle.tick(5); // calls during this interval
    expect(releases).toBe(0);
    idle.tick(5); // a whole interval without one
    expect(releases).toBe(1);
    idle.tick(5);
    idle.tick(5);
    expect(releases).toBe(1);
  });

  it('never releases while calls keep coming, and does after they stop', () => {
    let releases = 0;
    const idle = new IdleRelease(() => releases++);
    for (let served = 1; served <= 10; served++) idle.tick(served * 100);
    expect(releases).toBe(0);
    idle.tick(1000);
    expect(releases).toBe(1);
    idle.tick(1001);
    idle.tick(1001);
    expect(releases).toBe(2);
  });
});

describe('releaseHeap', () => {
  it('shrinks a young generation that allocation grew, reports its time in ms and sizes in bytes, and leaves no gc in this context', () => {
    const keep: unknown[] = [];
    for (let i = 0; i < 200_000; i++) keep.push({ i, s: `x${i}` });
    keep.length = 0;
    const started = process.hrtime.bigint();
    const r = releaseHeap();
    const aroundMs = Number(process.hrtime.bigint() - started) / 1e6;
    expect(r.youngAfter).toBeLessThan(r.youngBefore);
    // The collection's time in ms: within the time measured around the call (a wrong unit or a
    // clock read in the wrong place shows), and more than none (the collection ran).
    expect(r.tookMs).toBeGreaterThan(0);
    expect(r.tookMs).toBeLessThanOrEqual(aroundMs);
    // Sizes in bytes, as process.memoryUsage.rss() gives them.
    for (const k of ['rssBefore', 'rssAfter', 'youngBefore', 'youngAfter'] as const) expect(Number.isSafeInteger(r[k]) && r[k] > 0, `${k} = ${r[k]}`).toBe(true);
    expect('gc' in globalThis).toBe(false);
    // A second call reuses the function of the context made the first time.
    expect(releaseHeap().youngAfter).toBeLessThanOrEqual(r.youngBefore);
  });
});

describe('releaseHeap under node --expose-gc', () => {
  it('uses the global gc and leaves the flag set for contexts made later', async () => {
    const { spawnSync } = await import('node:child_process');
    const script = `
      const { releaseHeap } = await import(${JSON.stringify(new URL('../../../src/cli/heap-release.ts', import.meta.url).href)});
      releaseHeap();
      const vm = await import('node:vm');
      console.log(typeof globalThis.gc, typeof vm.runInNewContext('typeof gc') === 'string' ? vm.runInNewContext('typeof gc') : '?');`;
    const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('function function');
  });
});
