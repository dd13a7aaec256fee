/**
 * The bridge as users run it: `src/` compiled by the project's own tsc (tsconfig.build.json) into
 * a private folder under node_modules/.cache (ignored by git; the repository's dist/ is left alone),
 * then `node <build>/cli/main.js --config <file> serve`. Benchmarks of the running bridge use this
 * rather than tsx, whose loader thread would add its own memory and start-up work to the figures.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Where the build goes; BENCH_BUILD_DIR names another folder (two benchmarks running at once). */
export const BUILD_DIR = process.env.BENCH_BUILD_DIR ?? join(ROOT, 'node_modules', '.cache', 'a2a-mailbridge-bench', 'dist');

let built: string | null = null;

/** Compiles src/ once per process; returns the path of the CLI entry (`cli/main.js`). */
export function buildBridge(): string {
  if (built) return built;
  rmSync(BUILD_DIR, { recursive: true, force: true });
  mkdirSync(BUILD_DIR, { recursive: true });
  // Node looks for the package scope no further up than node_modules: say ESM here.
  writeFileSync(join(dirname(BUILD_DIR), 'package.json'), '{ "type": "module" }\n');
  const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript7/package.json')), 'bin', 'tsc');
  const t = performance.now();
  try {
    execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', BUILD_DIR, '--sourceMap', 'false'], { cwd: ROOT, stdio: 'pipe' });
  } catch (err) {
    // tsc still emits on type errors (src/ may be mid-change); say so and go on.
    const out = String((err as { stdout?: Buffer }).stdout ?? '').split('\n').slice(0, 5).join('\n');
    console.warn(`bench: tsc reported errors while building the bridge (it still emitted):\n${out}`);
  }
  console.log(`(built the bridge from src/ in ${Math.round(performance.now() - t)} ms)`);
  built = join(BUILD_DIR, 'cli', 'main.js');
  return built;
}
