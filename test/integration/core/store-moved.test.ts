import { copyFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { health } from '../../../src/a2a/health.js';
import { buildBridge } from '../../../src/app.js';
import { STORE_CHECK_FIRST_MS } from '../../../src/core/bridge.js';
import { loadConfig } from '../../../src/config/config.js';
import { createLogger } from '../../../src/log.js';
import { Store } from '../../../src/store/store.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';

/**
 * A fresh user's trial moved the store away under a running bridge: /health stayed ok, and
 * `status` and `stop` then called the bridge a stranger. The upkeep (at most once a minute on the
 * bridge clock) now looks whether `store.path` still names the file the bridge opened.
 */
const dirs: ConfigDir[] = [];
afterAll(() => {
  for (const c of dirs) rmSync(c.dir, { recursive: true, force: true });
});

/** A bridge on a fresh config, its clock in the test's hands (`clock.now`, ms) and its log lines kept. */
function world() {
  const c = makeConfigDir(minimalToml());
  dirs.push(c);
  const config = loadConfig(c.configPath);
  const clock = { now: Date.parse('2026-12-03T09:00:00Z') };
  const lines: { level: number; msg: string }[] = [];
  const built = buildBridge(config, { log: createLogger('info', { write: (s: string) => void lines.push(JSON.parse(s) as (typeof lines)[number]) }), now: () => clock.now });
  return { c, config, clock, lines, built, bridge: built.bridge };
}

describe('the store file moved away under a running bridge', () => {
  it('makes the store not ok, logged once at error, until the file is back', async () => {
    const { config, clock, lines, built, bridge } = world();
    try {
      await bridge.maintainStore();
      expect(bridge.health().storeCheck).toBeNull();
      const path = config.store.path;
      renameSync(path, `${path}.moved`);
      clock.now += 60_000;
      await bridge.maintainStore();
      expect(bridge.health().storeCheck).toMatchObject({ ok: false, detail: expect.stringContaining(`the store file ${path} was moved away or deleted while the bridge runs`) as string });
      clock.now += 60_000;
      await bridge.maintainStore();
      expect(lines.filter((l) => l.level === 50 && l.msg.startsWith('the store file'))).toHaveLength(1);
      renameSync(`${path}.moved`, path);
      clock.now += 60_000;
      await bridge.maintainStore();
      expect(bridge.health().storeCheck).toMatchObject({ ok: true, detail: `the store file is at ${path} again` });
    } finally {
      await built.close();
    }
  });

  // An attack review: the file-away state and the integrity check shared one result, so the next
  // quick_check (opening store.path by name) checked the replacement and made the store ok again,
  // or, with nothing there, replaced the "put the file back" guidance with "the store is damaged".
  it('keeps the store not ok, with its guidance, through the integrity check while another file is at store.path, and checks the bridge’s file once it is back', async () => {
    const { c, config, clock, lines, built, bridge } = world();
    const other = join(c.dir, 'other.sqlite');
    Store.open(other).close(); // another valid store (a backup restored with mv)
    const path = config.store.path;
    try {
      await bridge.maintainStore();
      renameSync(path, `${path}.moved`);
      copyFileSync(other, path);
      clock.now += 60_000;
      await bridge.maintainStore();
      const replaced = expect.stringContaining(`the store file ${path} was replaced by another file while the bridge runs`) as string;
      expect(bridge.health().storeCheck).toMatchObject({ ok: false, detail: replaced });
      clock.now += STORE_CHECK_FIRST_MS;
      await bridge.maintainStore();
      await bridge.idle();
      expect(bridge.health().storeCheck).toMatchObject({ ok: false, detail: replaced });
      expect(health(bridge, null).store.ok).toBe(false);
      expect(lines.filter((l) => l.msg.startsWith('store integrity check'))).toEqual([]); // the other file is not checked as the bridge's
      renameSync(`${path}.moved`, path);
      clock.now += 60_000;
      await bridge.maintainStore();
      await bridge.idle();
      expect(bridge.health().storeCheck).toMatchObject({ ok: true, detail: 'ok' }); // the check, due, ran on the bridge's file
      expect(health(bridge, null).store.ok).toBe(true);
      expect(lines.filter((l) => l.msg.startsWith('store integrity check'))).toEqual([expect.objectContaining({ level: 30, msg: 'store integrity check: ok' })]);
    } finally {
      await built.close();
    }
  });

  it('keeps the "put the file back" guidance through the integrity check while nothing is at store.path: not "damaged"', async () => {
    const { config, clock, lines, built, bridge } = world();
    const path = config.store.path;
    try {
      await bridge.maintainStore();
      renameSync(path, `${path}.moved`);
      clock.now += STORE_CHECK_FIRST_MS;
      await bridge.maintainStore();
      await bridge.idle();
      expect(bridge.health().storeCheck).toMatchObject({ ok: false, detail: expect.stringMatching(new RegExp(`^the store file ${path} was moved away or deleted while the bridge runs: .*; put the file back, or stop the bridge`)) as string });
      expect(lines.filter((l) => l.msg.includes('damaged'))).toEqual([]);
      clock.now += 60_000;
      await bridge.maintainStore();
      await bridge.idle();
      expect(bridge.health().storeCheck?.detail).toContain('put the file back');
    } finally {
      await built.close();
    }
  });
});
