/**
 * `npm run build`: src/ bundled by esbuild into one CommonJS file per process entry, in dist/cli/:
 * `main.js` (the CLI, `bin` of the package and the entry the service templates start) and the
 * worker threads' entries (`checkpoint-worker.js`, `integrity-worker.js`, `offload-worker.js`),
 * which src/ finds beside the module that starts them (`new URL('./…-worker.js', import.meta.url)`:
 * in the bundle, the entry's own URL). The libraries in node_modules stay outside the bundle, loaded
 * by `require`/`import` as before — except commander (ES module only, small), bundled in.
 *
 * Why a bundle (docs/architecture.md, "Start-up and memory"): Node's ES module loader gives each
 * `import … from 'node:fs'` (`node:util`, `node:process`…) a facade that reads every export of the
 * built-in, and so loads the lazy parts nothing uses (fs/promises with readline, util's diff and
 * parse_args, process.report…), and resolves and compiles 150 small files one by one. As CommonJS
 * in one file, `serve` on the bench config starts with about 10 MiB less resident memory and half
 * the CPU (bench/machine-limit.ts). Types are checked by `npm run typecheck`, not here.
 *
 * Usage: node scripts/build.ts [outdir]   (default dist; bench/lib/build.ts passes its own)
 */
import { build } from 'esbuild';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The process entries: the CLI and each worker thread's module, by output name. */
export const ENTRIES: Record<string, string> = {
  main: 'src/cli/main.ts',
  'checkpoint-worker': 'src/store/checkpoint-worker.ts',
  'integrity-worker': 'src/store/integrity-worker.ts',
  'offload-worker': 'src/uplink/offload-worker.ts',
};

/**
 * Writes the bundle into `outDir` (emptied first): `cli/<entry>.js` and `package.json` saying
 * CommonJS (the package itself is `"type": "module"`).
 * @returns the path of the CLI entry
 */
export async function bundle(outDir: string): Promise<string> {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(join(outDir, 'cli'), { recursive: true });
  writeFileSync(join(outDir, 'package.json'), '{ "type": "commonjs" }\n');
  await build({
    absWorkingDir: ROOT,
    entryPoints: ENTRIES,
    outdir: join(outDir, 'cli'),
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node22',
    // The libraries stay libraries (loaded from node_modules, lazily where src/ says so);
    // commander is ES module only, and its `import … from 'node:…'` would bring the facades back.
    packages: 'external',
    plugins: [
      {
        name: 'bundle-commander',
        setup(b) {
          b.onResolve({ filter: /^commander$/ }, () => ({ path: createRequire(import.meta.url).resolve('commander') }));
        },
      },
    ],
    // `import.meta.url` of a module is the URL of the bundle file it ends up in.
    define: { 'import.meta.url': 'import_meta_url' },
    banner: { js: "const import_meta_url = require('node:url').pathToFileURL(__filename).href;" },
    // No comments and no indentation (the source is held in memory while the process runs);
    // identifiers are not renamed, so a stack trace still names the function.
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'eof',
    charset: 'ascii',
    logLevel: 'warning',
  });
  return join(outDir, 'cli', 'main.js');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const out = resolve(ROOT, process.argv[2] ?? 'dist');
  console.log(`built ${await bundle(out)}`);
}
