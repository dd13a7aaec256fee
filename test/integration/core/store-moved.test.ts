import { renameSync, rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { buildBridge } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/config.js';
import { createLogger } from '../../../src/log.js';
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

describe('the store file moved away under a running bridge', () => {
  it('makes the store not ok, logged once at error, until the file is back', async () => {
    const c = makeConfigDir(minimalToml());
    dirs.push(c);
    const config = loadConfig(c.configPath);
    let now = Date.parse('2026-12-03T09:00:00Z');
    const lines: { level: number; msg: string }[] = [];
    const built = buildBridge(config, { log: createLogger('info', { write: (s: string) => void lines.push(JSON.parse(s) as (typeof lines)[number]) }), now: () => now });
    const { bridge } = built;
    try {
      await bridge.maintainStore();
      expect(bridge.health().storeCheck).toBeNull();
      const path = config.store.path;
      renameSync(path, `${path}.moved`);
      now += 60_000;
      await bridge.maintainStore();
      expect(bridge.health().storeCheck).toMatchObject({ ok: false, detail: expect.stringContaining(`the store file ${path} was moved away or deleted while the bridge runs`) as string });
      now += 60_000;
      await bridge.maintainStore();
      expect(lines.filter((l) => l.level === 50 && l.msg.startsWith('the store file'))).toHaveLength(1);
      renameSync(`${path}.moved`, path);
      now += 60_000;
      await bridge.maintainStore();
      expect(bridge.health().storeCheck).toMatchObject({ ok: true, detail: `the store file is at ${path} again` });
    } finally {
      await built.close();
    }
  });
});
