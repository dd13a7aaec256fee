/**
 * The bridge as users run it: src/ bundled by the project's own build (scripts/build.ts, what
 * `npm run build` writes into dist/) into a private folder under node_modules/.cache (ignored by
 * git; the repository's dist/ is left alone), then `node <build>/cli/main.js --config <file> serve`.
 * Benchmarks of the running bridge use this rather than tsx, whose loader thread would add its own
 * memory and start-up work to the figures.
 */
import { join } from 'node:path';
import { bundle } from '../../scripts/build.js';

const ROOT = join(import.meta.dirname, '..', '..');
/** Where the build goes; BENCH_BUILD_DIR names another folder (two benchmarks running at once). */
export const BUILD_DIR = process.env.BENCH_BUILD_DIR ?? join(ROOT, 'node_modules', '.cache', 'a2a-mailbridge-bench', 'dist');

let built: Promise<string> | null = null;

/** Builds src/ once per process; resolves with the path of the CLI entry (`cli/main.js`). */
export function buildBridge(): Promise<string> {
  built ??= (async () => {
    const t = performance.now();
    const main = await bundle(BUILD_DIR);
    console.log(`(built the bridge from src/ in ${Math.round(performance.now() - t)} ms)`);
    return main;
  })();
  return built;
}
