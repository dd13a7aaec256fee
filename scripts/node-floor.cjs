// The npm scripts a newcomer runs (`npm run demo`, `npm test`, `npm run build`) call this first:
// `node scripts/node-floor.cjs && …`. Under a Node older than package.json `engines` it prints one
// line naming the Node it found and exits 1, where `node scripts/build.ts` stopped with a stack
// trace (ERR_UNKNOWN_FILE_EXTENSION ".ts", Node 20). The built command says the same from
// src/cli/node-floor.ts, whose floor a test holds equal to `engines`.
//
// Plain CommonJS in the syntax of Node 8 (no `?.`, `??`, no `node:` prefix), so an old Node
// reads it: it must run exactly where the rest does not.
'use strict';

/** The floor `engines.node` states (`>=22.19`): major and minor. */
function nodeFloor() {
  const range = require('../package.json').engines.node;
  const m = /^>=(\d+)\.(\d+)$/.exec(range);
  if (!m) throw new Error('package.json engines.node must read ">=<major>.<minor>", not ' + JSON.stringify(range));
  return { major: Number(m[1]), minor: Number(m[2]) };
}

/**
 * Null when `version` (`process.versions.node`) is at least the floor; else the line for stderr:
 * the Node found (`execPath`), the script npm ran (`script`: npm_lifecycle_event), and how to get
 * a supported one first on PATH (npm runs a script with the first `node` on PATH).
 */
function nodeTooOldForScript(version, execPath, script) {
  const floor = nodeFloor();
  const parts = version.split('.').map(Number);
  const major = parts[0] || 0;
  const minor = parts[1] || 0;
  if (major > floor.major || (major === floor.major && minor >= floor.minor)) return null;
  const wanted = floor.major + '.' + floor.minor;
  const what = script ? '`npm run ' + script + '`' : 'this npm script';
  return (
    'a2a-mailbridge needs Node.js ' + wanted + ' or newer; ' + what + ' was started by Node.js ' + version + ' (' + execPath + '). ' +
    'npm runs a script with the first `node` on your PATH: put a supported Node first on PATH ' +
    '(README, "Try it": dir=$(scripts/node-from-registry.sh 26); export PATH="$dir/bin:$PATH")'
  );
}

module.exports = { nodeFloor: nodeFloor, nodeTooOldForScript: nodeTooOldForScript };

if (require.main === module) {
  const line = nodeTooOldForScript(process.versions.node, process.execPath, process.env.npm_lifecycle_event);
  if (line !== null) {
    process.stderr.write(line + '\n');
    process.exit(1);
  }
}
