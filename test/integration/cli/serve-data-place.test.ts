import { chmodSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';

/** `serve`, as a child process, refuses a store others could swap before it opens it (src/config/data-place.ts). */
const c = makeConfigDir(minimalToml());
afterAll(() => rmSync(c.dir, { recursive: true, force: true }));

describe('serve and the store place', () => {
  it('exits 2 naming the store folder others can write and the chmod, and makes no store there', async () => {
    const state = join(c.dir, 'state');
    mkdirSync(state);
    chmodSync(state, 0o777);
    const s = await runCli(['--config', c.configPath, 'serve']);
    expect(s.status).toBe(2);
    expect(s.stderr).toContain(`${state}, the store's folder, is writable by others (mode 0777), so they could replace the store; run: chmod go-w ${state}`);
    expect(existsSync(join(state, 'bridge.sqlite'))).toBe(false);
  });
});
