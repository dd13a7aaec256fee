import { mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createServiceLogger, rolledLogFiles } from '../../../src/log.js';

const MB = 1024 * 1024;
const line = 'x'.repeat(500);
/** Lets the event loop turn (a burst of requests spreads over many turns). */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('the service log files stay bounded', () => {
  it('log.max_files holds across restarts: files earlier runs left are pruned at start, and at every rotation', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mb-logs-'));
    const file = join(dir, 'mailbridge.log');
    // What 10 earlier runs left behind (pino-roll only ever pruned the files of its own run).
    for (let n = 1; n <= 11; n++) writeFileSync(join(dir, `mailbridge.${n}.log`), `{"run":${n}}\n`);
    writeFileSync(join(dir, 'other.log'), 'not ours\n');
    for (let run = 0; run < 10; run++) {
      const log = await createServiceLogger({ level: 'info', file, maxBytes: MB, maxFiles: 2 });
      expect(rolledLogFiles(file).length).toBeLessThanOrEqual(3);
      // Enough to rotate once in this run.
      for (let i = 0; i < 2500; i++) {
        log.info({ run, i, line }, 'restart test');
        if (i % 100 === 0) await turn();
      }
      await turn();
      await new Promise<void>((resolve) => log.flush(() => resolve()));
    }
    const left = rolledLogFiles(file);
    expect(left.length).toBeLessThanOrEqual(3);
    expect(readdirSync(dir)).toContain('other.log');
  });

  it('a burst of logging writes files of about log.max_size_mb, not several times it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mb-logs-'));
    const file = join(dir, 'mailbridge.log');
    const log = await createServiceLogger({ level: 'info', file, maxBytes: MB, maxFiles: 50 });
    // 20 MB from 40,000 requests, 100 lines an event-loop turn.
    for (let i = 0; i < 40_000; i++) {
      log.info({ i, line }, 'burst');
      if (i % 100 === 0) await turn();
    }
    await turn();
    await new Promise<void>((resolve) => log.flush(() => resolve()));
    const sizes = rolledLogFiles(file).map(([path]) => statSync(path).size);
    expect(sizes.length).toBeGreaterThan(10);
    // Each file, the first and every one a rotation opened, readable by this user only.
    for (const [path] of rolledLogFiles(file)) expect(statSync(path).mode & 0o777, path).toBe(0o600);
    // At most the size plus the lines of one event-loop turn (100 × ~560 bytes).
    for (const size of sizes) expect(size).toBeLessThanOrEqual(MB + 64 * 1024);
  });
});
