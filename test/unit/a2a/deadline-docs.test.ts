import { readFileSync, rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { DEADLINE_RANGE_S, parseSendParams } from '../../../src/a2a/params.js';
import { loadConfig } from '../../../src/config/config.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';

/**
 * The range of `deadline_s` (fresh-user trial: it was only in the error message) as the README
 * states it, against the code's constant (src/a2a/params.ts) and what the code accepts: per call
 * (`metadata.deadline_s`) and in the config (agents.deadline_s).
 */
const [LO, HI] = DEADLINE_RANGE_S;
/** How the README words the range: `from 10 s to 30 days` and the seconds `(2592000 s)`. */
const wording = `from ${LO} s to ${HI / 86_400} days`;

const readme = readFileSync('README.md', 'utf8');
/** The README's text between `start` and `end` (each found once, in that order). */
function section(start: string, end: string): string {
  const a = readme.indexOf(start);
  const b = readme.indexOf(end, a);
  expect(a, start).toBeGreaterThanOrEqual(0);
  expect(b, end).toBeGreaterThan(a);
  return readme.slice(a, b).replace(/\s+/g, ' ');
}

const dirs: ConfigDir[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d.dir, { recursive: true, force: true });
});
const send = (deadline: unknown) => () => parseSendParams({ message: { role: 'ROLE_USER', parts: [{ text: 'x' }], messageId: 'm', metadata: { deadline_s: deadline } } }, ['ROLE_USER']);
const configWith = (deadline: number) => {
  const c = makeConfigDir(minimalToml().replace('name = "grok"\n', `name = "grok"\ndeadline_s = ${deadline}\n`));
  dirs.push(c);
  return () => loadConfig(c.configPath);
};

describe('deadline_s: the range the README states is the one the code accepts', () => {
  it('"How callers see a long job" states metadata.deadline_s with the range and its seconds', () => {
    const text = section('### How callers see a long job', '## Operate');
    expect(text).toContain('`metadata`');
    expect(text).toContain(`\`deadline_s\`: an integer number of seconds ${wording} (${HI} s)`);
  });

  it('the config section states agents.deadline_s with the same range', () => {
    const text = section('The parts to fill in:', '### Register it in Hermes');
    expect(text).toContain(`\`deadline_s\` (how long the agent has for a turn: default 3600, an integer ${wording}, ${HI} s;`);
  });

  it('per call and in the config, the bounds are accepted and one second beyond them refused', () => {
    expect(send(LO)().message.deadlineMs).toBe(LO * 1000);
    expect(send(HI)().message.deadlineMs).toBe(HI * 1000);
    for (const bad of [LO - 1, HI + 1, 60.5, '60']) expect(send(bad), String(bad)).toThrow(`metadata.deadline_s must be an integer number of seconds from ${LO} to ${HI}`);
    expect(configWith(LO)().agents[0]!.deadlineMs).toBe(LO * 1000);
    expect(configWith(HI)().agents[0]!.deadlineMs).toBe(HI * 1000);
    expect(configWith(LO - 1)).toThrow(`config key agents[0].deadline_s: must be an integer from ${LO} to ${HI}, got ${LO - 1}`);
    expect(configWith(HI + 1)).toThrow(`must be an integer from ${LO} to ${HI}, got ${HI + 1}`);
  });
});
