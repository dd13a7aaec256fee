import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NODE_FLOOR } from '../../../src/cli/node-floor.js';

/**
 * A newcomer whose first `node` on PATH is older than the floor (Debian 13's own Node 20) runs
 * `npm run demo` or `npm run build` with the npm beside it: one line naming that Node, exit 1 —
 * not the stack trace `node scripts/build.ts` gave (ERR_UNKNOWN_FILE_EXTENSION ".ts"). Runs when
 * such a Node is installed (/usr/bin/node, or on PATH) with its npm; skipped otherwise.
 */

/** The first `node` found below the floor, with the `npm` beside it; null when there is none. */
function oldNode(): { node: string; npm: string; version: string } | null {
  const candidates = ['/usr/bin/node', '/usr/local/bin/node', ...(process.env.PATH ?? '').split(delimiter).map((d) => join(d, 'node'))];
  for (const node of candidates) {
    const npm = join(dirname(node), 'npm');
    if (!existsSync(node) || !existsSync(npm)) continue;
    const r = spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8', timeout: 10_000 });
    const [major = 0, minor = 0] = r.stdout.trim().split('.').map(Number);
    if (r.status === 0 && (major < NODE_FLOOR.major || (major === NODE_FLOOR.major && minor < NODE_FLOOR.minor))) return { node, npm, version: r.stdout.trim() };
  }
  return null;
}

const old = oldNode();

describe('the npm scripts under a Node older than the floor', () => {
  it.skipIf(old === null).each(['demo', 'build'])('npm run %s says so in one line and exits 1 (skipped where no Node below the floor is installed)', (script) => {
    const { node, npm, version } = old!;
    // As the newcomer has it: that Node's folder first on PATH, so npm and the scripts run on it.
    const r = spawnSync(npm, ['run', script], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, PATH: `${dirname(node)}${delimiter}${process.env.PATH ?? ''}` } });
    expect(r.status, r.stderr).toBe(1);
    const ours = r.stderr.split('\n').filter((l) => l.startsWith('a2a-mailbridge'));
    expect(ours).toEqual([expect.stringMatching(new RegExp(`^a2a-mailbridge needs Node\\.js ${NODE_FLOOR.major}\\.${NODE_FLOOR.minor} or newer; \`npm run ${script}\` was started by Node\\.js ${version.replaceAll('.', '\\.')} \\(/\\S+\\)\\. npm runs a script with the first \`node\` on your PATH: `))]);
    expect(r.stderr + r.stdout).not.toMatch(/ERR_UNKNOWN_FILE_EXTENSION|\n\s+at /);
  });
});
