import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { NODE_FLOOR, nodeTooOld } from '../../../src/cli/node-floor.js';

/** scripts/node-floor.cjs: the check the npm scripts run first, in plain CommonJS for an old Node. */
const scriptFloor = createRequire(import.meta.url)('../../../scripts/node-floor.cjs') as {
  nodeFloor(): { major: number; minor: number };
  nodeTooOldForScript(version: string, execPath: string, script: string | undefined): string | null;
};
const packageJson = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };

describe('the oldest Node the command runs on', () => {
  it('is the floor package.json states in engines', () => {
    const engines = (JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } }).engines.node;
    expect(engines).toBe(`>=${NODE_FLOOR.major}.${NODE_FLOOR.minor}`);
  });

  it('a Node below it is named, with where it was found and what to do; the floor and above pass', () => {
    for (const ok of ['22.19.0', '22.23.5', '23.0.0', '24.1.0', '26.12.1']) expect(nodeTooOld(ok, '/n/bin/node', '/x/main.js'), ok).toBeNull();
    expect(nodeTooOld('20.20.2', '/usr/bin/node', '/x/dist/cli/main.js')).toBe(
      'a2a-mailbridge needs Node.js 22.19 or newer; it was started by Node.js 20.20.2 (/usr/bin/node). The command runs with the first `node` on your PATH, ' +
        'not the one npm link or npm ci ran with: put a supported Node first on PATH, or run: <node 22.19 or newer> /x/dist/cli/main.js …',
    );
    expect(nodeTooOld('22.18.9', '/n', '/m')).toMatch(/^a2a-mailbridge needs Node\.js 22\.19 or newer; it was started by Node\.js 22\.18\.9 \(\/n\)/);
  });

  it('the npm scripts a newcomer runs check it first, with the same floor and the same first words as the command', () => {
    expect(scriptFloor.nodeFloor()).toEqual(NODE_FLOOR);
    for (const name of ['demo', 'test', 'build']) expect(packageJson.scripts[name], name).toMatch(/^node scripts\/node-floor\.cjs && /);
    for (const ok of ['22.19.0', '24.1.0', '26.12.1']) expect(scriptFloor.nodeTooOldForScript(ok, '/n/bin/node', 'demo'), ok).toBeNull();
    const line = scriptFloor.nodeTooOldForScript('20.20.2', '/usr/bin/node', 'demo')!;
    expect(line).toBe(
      'a2a-mailbridge needs Node.js 22.19 or newer; `npm run demo` was started by Node.js 20.20.2 (/usr/bin/node). npm runs a script with the first `node` on your PATH: ' +
        'put a supported Node first on PATH (README, "Try it": dir=$(scripts/node-from-registry.sh 26); export PATH="$dir/bin:$PATH")',
    );
    expect(line.split('; ')[0]).toBe(nodeTooOld('20.20.2', '/usr/bin/node', 'main.js')!.split('; ')[0]);
    expect(line).not.toContain('\n');
  });
});

