/**
 * The oldest Node.js the command runs on: package.json `engines` (`>=22.19`; README, "Try it").
 *
 * The command (`dist/cli/main.js`, `#!/usr/bin/env node`) runs with whichever `node` comes first
 * on PATH when it is called, not the one `npm link` or `npm ci` ran with. Under Node 20 (Debian
 * 13's own `nodejs`) the entry stopped on "getCompileCacheDir is not a function" (`node:module`,
 * Node 22.1) with a page of minified code, and the SQLite addon crashes the process; so the entry
 * (src/cli/entry.ts) asks this first, before it runs anything that needs a newer Node.
 */
export const NODE_FLOOR = { major: 22, minor: 19 } as const;

/**
 * Null when `version` (`process.versions.node`, e.g. `22.19.0`) is at least {@link NODE_FLOOR};
 * else one line for stderr naming the Node that was found (`execPath`), why it was that one, and
 * how to run `script` (the entry's path) with a supported one.
 */
export function nodeTooOld(version: string, execPath: string, script: string): string | null {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (major > NODE_FLOOR.major || (major === NODE_FLOOR.major && minor >= NODE_FLOOR.minor)) return null;
  const floor = `${NODE_FLOOR.major}.${NODE_FLOOR.minor}`;
  return (
    `a2a-mailbridge needs Node.js ${floor} or newer; it was started by Node.js ${version} (${execPath}). ` +
    'The command runs with the first `node` on your PATH, not the one npm link or npm ci ran with: ' +
    `put a supported Node first on PATH, or run: <node ${floor} or newer> ${script} …`
  );
}
