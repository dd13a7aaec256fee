import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

/** The shells a printed command must be safe to paste into (the tester's report: sh, bash, zsh). */
export const SHELLS = ['sh', 'bash', 'zsh'] as const;

/**
 * Runs `line` as pasted into `shell` (`<shell> -c <line>`) in the folder `cwd`.
 * @returns its stdout; throws when the command exits non-zero (the error carries stderr)
 */
export function paste(shell: (typeof SHELLS)[number], line: string, cwd: string): string {
  return execFileSync(shell, ['-c', line], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The names in `dir`, sorted: a test compares them before and after a paste, to see it made nothing. */
export function names(dir: string): string[] {
  return readdirSync(dir).sort();
}
