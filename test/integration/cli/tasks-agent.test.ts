import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';
import { IDS, buildStore } from '../../helpers/store-fixture.js';

/**
 * `tasks --agent` with a name that matches no task: a typo (neither an agent of the config nor one
 * a stored task names) is said to be one, with the known names, and exits 1 as `cancel --all-open
 * --agent` does; an agent removed from the config whose tasks are stored is still listed.
 */
let c: ConfigDir;
const cli = (...args: string[]) => runCli(['--config', c.configPath, ...args]);

beforeAll(() => {
  c = makeConfigDir(minimalToml());
  mkdirSync(join(c.dir, 'state'), { mode: 0o700 });
  buildStore(join(c.dir, 'state', 'bridge.sqlite'), Math.floor(Date.now() / 1000) * 1000).close();
});
afterAll(() => {
  if (c) rmSync(c.dir, { recursive: true, force: true });
});

describe('tasks --agent with a name no one knows', () => {
  it('neither in the config nor named by a stored task: says so with the known names (exit 1); an agent of stored tasks only is listed', async () => {
    const typo = await cli('tasks', '--agent', 'grk');
    expect([typo.status, typo.stdout, typo.stderr]).toEqual([1, '', 'a2a-mailbridge: no agent grk: not in the config, and no stored task names it; the known agents: grok, claude; did you mean "grok"?\n']);
    // claude is no longer in the config (minimalToml has grok only), but its tasks are listed.
    const removed = await cli('tasks', '--agent', 'claude');
    expect([removed.status, removed.stderr]).toEqual([0, '']);
    expect(removed.stdout).toContain(IDS.recentFailed);
    // A configured agent whose filter matches nothing is no error.
    expect(await cli('tasks', '--agent', 'grok', '--context', 'no-such-context')).toMatchObject({ status: 0, stdout: 'no tasks match\n', stderr: '' });
    const json = await cli('tasks', '--agent', 'grk', '--json');
    expect([json.status, json.stdout]).toEqual([1, '']);
    // With --db and no config to read: the names the store's tasks give.
    const db = await runCli(['--config', join(c.dir, 'none.toml'), 'tasks', '--db', join(c.dir, 'state', 'bridge.sqlite'), '--agent', 'claud']);
    expect([db.status, db.stderr]).toEqual([1, 'a2a-mailbridge: no agent claud: no task in this store names it; the known agents: claude, grok; did you mean "claude"?\n']);
  });
});
