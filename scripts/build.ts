/**
 * `npm run build`: src/ bundled by esbuild into one CommonJS file per process entry, in dist/cli/:
 * `main.js` (the CLI, `bin` of the package and the entry the service templates start) and the
 * worker threads' entries (`checkpoint-worker.js`, `integrity-worker.js`, `offload-worker.js`),
 * which src/ finds beside the module that starts them (`new URL('./…-worker.js', import.meta.url)`:
 * in the bundle, the entry's own URL). The libraries every start loads ({@link BUNDLED}, with the
 * packages they require) are bundled in; the others stay in node_modules, loaded by their first use
 * (`require`/`import`, lazily where src/ says so).
 *
 * Why a bundle (docs/architecture.md, "Start-up and memory"): Node's ES module loader gives each
 * `import … from 'node:fs'` (`node:util`, `node:process`…) a facade that reads every export of the
 * built-in, and so loads the lazy parts nothing uses (fs/promises with readline, util's diff and
 * parse_args, process.report…), and resolves and compiles 150 small files one by one. As CommonJS
 * in one file, `serve` on the bench config starts with about 10 MiB less resident memory and half
 * the CPU (bench/machine-limit.ts). The libraries of every start are bundled for the same reason:
 * Node's CommonJS loader resolves each of their ~60 files through node:path, and that loop alone
 * makes V8's optimising compiler start, paging in about 3 MiB of the node binary's code in a process
 * that has done no work yet. Types are checked by `npm run typecheck`, not here.
 *
 * Usage: node scripts/build.ts [outdir]   (default dist; bench/lib/build.ts passes its own)
 */
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The libraries `serve` loads at every start, bundled in with every package they require:
 * commander (ES module only: its `import … from 'node:…'` would bring Node's facades back), the
 * store, the logger, the config parser and its "did you mean" distance, the webhook signer. The
 * others (the IMAP client, the mail parsers, DKIM, the HTTP client…) stay in node_modules and load
 * at their first use (docs/architecture.md, "Start-up and memory").
 */
export const BUNDLED = ['commander', 'better-sqlite3', 'pino', 'smol-toml', 'fastest-levenshtein', 'standardwebhooks'];

/**
 * better-sqlite3 finds its compiled addon from its own folder (`lib/binding.js`: `__dirname`, then
 * `../build/Release/` or `../prebuilds/<platform>-<arch>.node`). In the bundle that folder is the
 * package's `lib/` as Node resolves it at run time, so the addon is the one npm installed for this
 * Node and platform.
 */
const SQLITE_BINDING = /[\\/]better-sqlite3[\\/]lib[\\/]binding\.js$/;
const SQLITE_LIB_DIR = "require('node:path').dirname(require('node:module').createRequire(__filename).resolve('better-sqlite3'))";

/**
 * Modules a bundled library requires at load but uses only on a path the CLI does not take, by
 * the package that requires them: commander spawns `node:child_process` only for a stand-alone
 * executable subcommand (this CLI has none); sonic-boom (pino's destination) calls `assert` only
 * when a file descriptor is not a number; pino starts a `thread-stream` (which loads `assert` and
 * `worker_threads`) only for a transport (`log.file`: pino-roll). Each is bound to a stand-in that
 * requires the real module at its first use: `serve` compiles 6 fewer of Node's internal modules
 * at every start (assert's), a command that opens no server (`tasks`, `show`…) 5 fewer
 * (child_process's, which `serve` loads anyway: node:cluster requires it when the server listens).
 * docs/architecture.md, "Start-up and memory".
 */
export const LAZY_REQUIRES: Record<string, readonly string[]> = { commander: ['node:child_process'], 'sonic-boom': ['assert'], pino: ['thread-stream'] };

/**
 * The stand-in for module `name`: a Proxy that forwards every operation (a property read, a
 * call, `new`, `in`) to the real module, required at the first.
 */
function standIn(name: string): string {
  return `let real;
const load = () => (real ??= require(${JSON.stringify(name)}));
module.exports = new Proxy(function () {}, {
  get: (_, k) => Reflect.get(load(), k),
  has: (_, k) => Reflect.has(load(), k),
  apply: (_, self, args) => Reflect.apply(load(), self, args),
  construct: (_, args) => Reflect.construct(load(), args),
});
`;
}

/** The package of node_modules `file` (an absolute path) lies in, e.g. `commander`, `@scope/name`; null outside node_modules. */
function packageOf(file: string): string | null {
  const m = /[\\/]node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)[\\/](?!.*[\\/]node_modules[\\/])/.exec(file);
  return m ? m[1]!.replace('\\', '/') : null;
}

/** The process entries: the CLI and each worker thread's module, by output name. */
export const ENTRIES: Record<string, string> = {
  main: 'src/cli/entry.ts',
  bundle: 'src/cli/main.ts',
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
    // Packages stay external but for BUNDLED and what they require (the plugin below).
    packages: 'external',
    plugins: [
      {
        name: 'bundle-start-libraries',
        setup(b) {
          b.onResolve({ filter: /^[^./]/ }, (a) => {
            // The stand-in's own require: the real module (a built-in stays a require of Node's).
            if (a.namespace === 'stand-in') return isBuiltin(a.path) ? { path: a.path, external: true } : { path: createRequire(join(a.resolveDir, 'x.js')).resolve(a.path) };
            const importerPackage = packageOf(a.importer);
            if (LAZY_REQUIRES[importerPackage ?? '']?.includes(a.path)) return { path: a.path, namespace: 'stand-in', pluginData: dirname(a.importer) };
            if (isBuiltin(a.path)) return undefined;
            const name = a.path.startsWith('@') ? a.path.split('/').slice(0, 2).join('/') : a.path.split('/')[0]!;
            const fromBundledLibrary = importerPackage !== null;
            if (!fromBundledLibrary && !BUNDLED.includes(name)) return undefined;
            return { path: createRequire(fromBundledLibrary ? a.importer : join(ROOT, 'package.json')).resolve(a.path) };
          });
          b.onLoad({ filter: /.*/, namespace: 'stand-in' }, (a) => ({ contents: standIn(a.path), loader: 'js', resolveDir: a.pluginData as string }));
          b.onLoad({ filter: SQLITE_BINDING }, (a) => {
            const text = readFileSync(a.path, 'utf8');
            if (!text.includes('__dirname')) throw new Error(`${a.path} no longer finds its addon from __dirname: see SQLITE_BINDING in scripts/build.ts`);
            return { contents: text.replaceAll('__dirname', SQLITE_LIB_DIR), loader: 'js' };
          });
        },
      },
    ],
    // `import()` of a package left in node_modules (the mail parsers, DKIM, pino-roll: all
    // CommonJS) becomes a `require` in a promise: the bundle runs as a `vm.Script`
    // (src/cli/entry.ts), where a native `import()` needs Node's experimental loader hook.
    supported: { 'dynamic-import': false },
    // `import.meta.url` of a module is the URL of the bundle file it ends up in.
    define: { 'import.meta.url': 'import_meta_url' },
    banner: { js: "const import_meta_url = require('node:url').pathToFileURL(__filename).href;" },
    // No comments and no indentation (the source is held in memory while the process runs);
    // identifiers are not renamed, so a stack trace still names the function.
    minifyWhitespace: true,
    minifySyntax: true,
    // A map beside each file, read only under `node --enable-source-maps` (then a stack trace
    // names src/ files and lines); without the flag Node never opens it.
    sourcemap: 'linked',
    sourcesContent: false,
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
