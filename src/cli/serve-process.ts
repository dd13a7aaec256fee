import { existsSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';

/**
 * Whether process `pid` is a Node process running `a2a-mailbridge … serve`, by its command line
 * (`<procRoot>/<pid>/cmdline`, NUL-separated, Linux proc(5)): the check `stop` makes before it
 * signals the pid a claim's note names, so a pid the kernel gave to another process since is not
 * signalled. The program is `node` (or `nodejs`…: its base name starts with "node"), one argument
 * is the CLI (`…/a2a-mailbridge`, `…/cli/main.js`, `…/cli/main.ts`, `…/cli/bundle.js`) and one is
 * `serve`.
 *
 * @param procRoot `/proc` (a test seam)
 * @returns true or false; null where `procRoot` does not exist (macOS: the check is skipped), or
 *   the process is gone
 */
export function runsServe(pid: number, procRoot = '/proc'): boolean | null {
  if (!existsSync(procRoot)) return null;
  let argv: string[];
  try {
    argv = readFileSync(`${procRoot}/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
  } catch {
    return null;
  }
  const [program, ...args] = argv;
  if (program === undefined || !basename(program).startsWith('node')) return false;
  const cli = args.some((a) => /(^|\/)(a2a-mailbridge|cli\/(main|bundle)\.[cm]?[jt]s)$/.test(a));
  return cli && args.includes('serve');
}
