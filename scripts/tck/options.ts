/**
 * The command line of scripts/conformance-tck.ts: its modes, options, defaults and usage errors
 * (exit code 2).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export type Mode = 'as-is' | 'adapted';

export interface Options {
  tck: string;
  tckRev: string;
  modes: Mode[];
  python: string;
  replyDelayMs: number;
  timeoutS: number;
  out: string;
  artifacts: string;
  verbose: boolean;
}

function usage(message: string): never {
  process.stderr.write(`conformance-tck: ${message}\nusage: npx tsx scripts/conformance-tck.ts --tck <kit work tree> [--tck-rev REV] [--mode both|as-is|adapted] [--python /usr/bin/python3] [--reply-delay-ms 500] [--timeout-s 900] [--out FILE] [--artifacts DIR] [--verbose]\n`);
  process.exit(2);
}

export function parseArgs(argv: string[]): Options {
  const o: Partial<Options> & { mode?: string } = { python: '/usr/bin/python3', replyDelayMs: 500, timeoutS: 900, verbose: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) usage(`${a} needs a value`);
      return v;
    };
    const int = (name: string, min: number): number => {
      const v = Number(value());
      if (!Number.isInteger(v) || v < min) usage(`${name} must be an integer ≥ ${min}`);
      return v;
    };
    switch (a) {
      case '--tck': o.tck = resolve(value()); break;
      case '--tck-rev': o.tckRev = value(); break;
      case '--mode': o.mode = value(); break;
      case '--python': o.python = value(); break;
      case '--reply-delay-ms': o.replyDelayMs = int(a, 0); break;
      case '--timeout-s': o.timeoutS = int(a, 10); break;
      case '--out': o.out = resolve(value()); break;
      case '--artifacts': o.artifacts = resolve(value()); break;
      case '--verbose': o.verbose = true; break;
      default: usage(a === '-h' || a === '--help' ? 'help' : `unknown argument ${a}`);
    }
  }
  if (!o.tck) usage('--tck is required');
  if (!existsSync(join(o.tck, 'run_tck.py')) || !existsSync(join(o.tck, 'tests', 'mandatory'))) {
    usage(`${o.tck} has no run_tck.py and tests/mandatory/: not a v0.3 a2a-tck work tree`);
  }
  if (o.tck === REPO || o.tck.startsWith(`${REPO}/`)) usage('keep the kit outside this repository');
  if (!existsSync(o.python!)) usage(`${o.python} not found; run scripts/install-tck-deps.sh`);
  const mode = o.mode ?? 'both';
  if (!['both', 'as-is', 'adapted'].includes(mode)) usage('--mode is both, as-is or adapted');
  const rev = spawnSync('git', ['-C', o.tck, 'rev-parse', 'HEAD'], { encoding: 'utf8' });
  return {
    tck: o.tck,
    tckRev: o.tckRev ?? (rev.status === 0 ? rev.stdout.trim() : 'unknown'),
    modes: mode === 'both' ? ['as-is', 'adapted'] : [mode as Mode],
    python: o.python!,
    replyDelayMs: o.replyDelayMs!,
    timeoutS: o.timeoutS!,
    out: o.out ?? join(REPO, 'scripts', 'conformance-tck.last.md'),
    artifacts: o.artifacts ?? mkdtempSync(join(tmpdir(), 'a2a-tck-run-')),
    verbose: o.verbose!,
  };
}
