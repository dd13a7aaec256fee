import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildBridge } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/config.js';
import { createLogger } from '../../../src/log.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';

/**
 * "UNREACHABLE since …" (status, /health, a caller's status text) after a restart: a run of
 * mailbox failures the store shows from a previous run of the bridge is not carried over as this
 * run's (fresh-user trial: a bridge started at 04:17:53 showed "since 04:17:47Z"); within a run,
 * "since" stays at the run's first failure. The Maildir here does not exist, so every check fails.
 */
const dirs: ConfigDir[] = [];
afterAll(() => {
  for (const c of dirs) rmSync(c.dir, { recursive: true, force: true });
});

describe('mailbox errorSince across a restart', () => {
  it("is this run's first failure, not the previous run's; later failures of the run keep it", async () => {
    const c = makeConfigDir(minimalToml());
    dirs.push(c);
    const config = loadConfig(c.configPath);
    let now = Date.parse('2026-12-03T04:17:47Z');
    const run = async (): Promise<number | null> => {
      const built = buildBridge(config, { log: createLogger('silent'), now: () => now });
      try {
        const summary = await built.bridge.checkNow();
        expect(summary.ok).toBe(false);
        return built.bridge.ctx.store.mailbox.state(built.bridge.ctx.mailbox.folder).errorSince;
      } finally {
        await built.close();
      }
    };
    const first = now;
    expect(await run()).toBe(first);
    // Stopped, and started again 6 s later: its first failure starts the run.
    now += 6_000;
    const restarted = now;
    const built = buildBridge(config, { log: createLogger('silent'), now: () => now });
    try {
      await built.bridge.checkNow();
      const folder = built.bridge.ctx.mailbox.folder;
      expect(built.bridge.ctx.store.mailbox.state(folder).errorSince).toBe(restarted);
      // The same run fails again later: "since" stays at its first failure.
      now += 60_000;
      await built.bridge.checkNow();
      expect(built.bridge.ctx.store.mailbox.state(folder)).toMatchObject({ errorSince: restarted, lastCheckAt: now });
    } finally {
      await built.close();
    }
  });

  // A fresh user's trial: the failures were logged, the mailbox coming back was not.
  it('a check that succeeds after failures logs once that the mailbox is back, with when the failures began and the last error', async () => {
    const c = makeConfigDir(minimalToml());
    dirs.push(c);
    const config = loadConfig(c.configPath);
    let now = Date.parse('2026-12-03T08:00:00Z');
    const lines: { msg: string; failingSince?: string; lastError?: string }[] = [];
    const built = buildBridge(config, { log: createLogger('info', { write: (s: string) => void lines.push(JSON.parse(s) as (typeof lines)[number]) }), now: () => now });
    try {
      expect((await built.bridge.checkNow()).ok).toBe(false);
      now += 60_000;
      expect((await built.bridge.checkNow()).ok).toBe(false);
      for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(config.mailbox.maildirPath!, sub), { recursive: true });
      now += 60_000;
      expect((await built.bridge.checkNow()).ok).toBe(true);
      now += 60_000;
      expect((await built.bridge.checkNow()).ok).toBe(true);
      const back = lines.filter((l) => l.msg === 'mailbox check ok again');
      expect(back).toHaveLength(1);
      expect(back[0]).toMatchObject({ failingSince: '2026-12-03T08:00:00.000Z', lastError: expect.stringContaining(config.mailbox.maildirPath!) as string });
      // The two failures are one run with one error: logged once (the second at debug, not written here).
      expect(lines.filter((l) => l.msg === 'mailbox check failed')).toHaveLength(1);
    } finally {
      await built.close();
    }
  });
});
