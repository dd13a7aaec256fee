import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';

/**
 * README's "Quickstart" (fresh-user trial: 1,065 lines and no short path for an operator): short,
 * right after the demo, every `a2a-mailbridge …` it cites a command of the program with the
 * options it names (asked of the program itself, `<command> --help`), every link a heading of the README.
 */
const readme = readFileSync('README.md', 'utf8');
const headings = [...readme.matchAll(/^#{2,4} (.+)$/gm)].map((m) => m[1]!);
/** GitHub's anchor of a heading: lower case, punctuation but `-` dropped, spaces as `-`. */
const anchor = (h: string): string => h.toLowerCase().replace(/[^\p{L}\p{N} -]/gu, '').replace(/ /g, '-');
const start = readme.indexOf('\n## Quickstart\n');
const end = readme.indexOf('\n## ', start + 1);
const section = readme.slice(start + 1, end);

describe('README: Quickstart', () => {
  it('comes right after the demo section, in at most 25 lines, and is in the contents', () => {
    expect(start).toBeGreaterThan(0);
    expect(headings.indexOf('Quickstart')).toBe(headings.indexOf('Try it: the demo') + 1);
    expect(section.trimEnd().split('\n').length).toBeLessThanOrEqual(25);
    expect(readme.slice(0, readme.indexOf('\n## '))).toContain('[quickstart](#quickstart)');
  });

  it('links only to headings of the README', () => {
    expect(start).toBeGreaterThan(0);
    const links = [...section.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThanOrEqual(3);
    const anchors = new Set(headings.map(anchor));
    for (const l of links) expect(anchors.has(l), l).toBe(true);
  });

  it('cites only commands and options the program has', async () => {
    // `a2a-mailbridge <command words> [--option …]`: the words up to the first that is not one.
    const cited = [...section.matchAll(/a2a-mailbridge((?: [a-z][a-z-]*)+)((?: --[a-z-]+(?: [^\s`-][^\s`]*)?)*)/g)].map((m) => ({
      words: m[1]!.trim().split(' '),
      options: [...m[2]!.matchAll(/--[a-z-]+/g)].map((o) => o[0]),
    }));
    const commands = new Set(cited.map((c) => c.words.join(' ')));
    expect([...commands].sort()).toEqual(['doctor', 'init', 'serve', 'service install', 'status', 'stop']);
    for (const command of commands) {
      const help = await runCli([...command.split(' '), '--help']);
      expect(help.status, command).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^Usage: a2a-mailbridge ${command} `));
      for (const c of cited.filter((x) => x.words.join(' ') === command)) {
        for (const o of c.options) expect(help.stdout, `${command} ${o}`).toMatch(new RegExp(`^ +${o}\\b`, 'm'));
      }
    }
    expect(cited.some((c) => c.options.includes('--maildir'))).toBe(true);
  });
});
