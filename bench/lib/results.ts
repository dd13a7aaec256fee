import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeMachine, machineLine } from './machine.js';

/**
 * bench/RESULTS.md holds one section per benchmark script, between HTML comment markers, so each
 * script can be run alone and replace only its own section. Each section names the machine and
 * the date it was measured on; the header at the top names the machine of the latest run.
 */
export const RESULTS_PATH = join(dirname(fileURLToPath(import.meta.url)), '..', 'RESULTS.md');

/** The order sections appear in, whatever order the scripts ran in. */
const ORDER = ['machine-limit', 'instructions', 'million', 'a2a-overhead', 'mailbox-check', 'maildir-check', 'maildir-junk', 'flood', 'gates', 'reply-parse', 'replay-store', 'arrival-latency', 'store-bounds', 'memory'];

const HEADER = `# a2a-mailbridge benchmarks

Written by the scripts in \`bench/\` (\`npm run bench\` runs all; each runs alone with
\`npx tsx bench/<name>.ts\`). Figures are what one run measured on the machine named in each
section; nothing here is asserted by a test. Goals are the project's performance targets.
`;

/** The code measured: the commit, and whether src/ had uncommitted changes (read-only git queries). */
function codeLine(): string {
  const root = join(dirname(RESULTS_PATH), '..');
  try {
    const git = (...args: string[]): string => execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = git('status', '--porcelain', '--', 'src') !== '';
    return `commit ${git('rev-parse', '--short', 'HEAD')}${dirty ? ' with uncommitted changes in src/' : ''}`;
  } catch {
    return 'not a git checkout';
  }
}

function markers(name: string): [string, string] {
  return [`<!-- bench:${name} -->`, `<!-- /bench:${name} -->`];
}

function sectionsOf(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const re = /<!-- bench:([a-z0-9-]+) -->\n([\s\S]*?)\n<!-- \/bench:\1 -->/g;
  for (const m of text.matchAll(re)) out.set(m[1]!, m[2]!);
  return out;
}

/**
 * Prints `body` and writes it as the section `name` of bench/RESULTS.md, headed by the machine's
 * description and the date.
 */
export function writeSection(name: string, title: string, body: string): void {
  const section = `## ${title}\n\nMachine: ${machineLine(describeMachine())}. Code: ${codeLine()}.\n\n${body.trim()}`;
  console.log(`\n${section}\n`);
  const old = existsSync(RESULTS_PATH) ? readFileSync(RESULTS_PATH, 'utf8') : '';
  const sections = sectionsOf(old);
  sections.set(name, section);
  const names = [...ORDER.filter((n) => sections.has(n)), ...[...sections.keys()].filter((n) => !ORDER.includes(n))];
  const parts = names.map((n) => {
    const [open, close] = markers(n);
    return `${open}\n${sections.get(n)}\n${close}`;
  });
  writeFileSync(RESULTS_PATH, `${HEADER}\n${parts.join('\n\n')}\n`);
  console.log(`(written to ${RESULTS_PATH})`);
}
