#!/usr/bin/env node
/**
 * The process entry of the CLI (`dist/cli/main.js`, the package's `bin` and what the service
 * templates start): runs the CLI's bundle (`dist/cli/bundle.js`, src/cli/main.ts and all it
 * imports) with a V8 code cache of it, so a start compiles almost nothing.
 *
 * Node's own compile cache (`NODE_COMPILE_CACHE`) keeps the code V8 compiled *before* a module
 * ran: for the bundle, its top level only, as every module in it is a function that V8 compiles
 * lazily, when it first runs. This cache is made by `serve` *after* it started
 * (src/cli/code-cache.ts), so it holds every function a start runs: `serve` on the bench config
 * starts about 20 ms sooner (docs/architecture.md, "Start-up and memory").
 *
 * The cache is a file in Node's compile cache folder (`NODE_COMPILE_CACHE`, set by the service
 * templates to a folder beside the store; its name carries Node's version): with the variable
 * unset there is none, and the bundle is compiled as any module is. V8 checks a cache against its
 * own version, its flags and the source's *length* only, and not its own bytes, so the file also
 * names the bundle file it was made from (device, inode, size, modification and change times,
 * {@link bundleIdentity}) and the hash of its bytes (src/cli/code-cache-file.ts): a cache of another
 * file, of this one before any write to it, or damaged, is never used. A cache that is missing,
 * unusable or refused by V8 is made again by the next `serve`. Nothing here is needed for the CLI
 * to work: every failure reading or writing the cache is ignored, as Node ignores its own
 * (docs/architecture.md, "Start-up and memory").
 */
// First: a `serve` command line holds Ctrl-C and SIGTERM while the bundle is read and compiled (serve-signals-early.ts).
import './serve-signals-early.js';
import { closeSync, fstatSync, openSync, readFileSync, type BigIntStats } from 'node:fs';
import { createRequire, getCompileCacheDir } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';
import { CODE_CACHE_HOOK, type CodeCacheWriter } from './code-cache.js';
import { readCodeCache, writeCodeCache } from './code-cache-file.js';
import { nodeTooOld } from './node-floor.js';

const bundlePath = join(dirname(fileURLToPath(import.meta.url)), 'bundle.js');

const tooOld = nodeTooOld(process.versions.node, process.execPath, fileURLToPath(import.meta.url));
if (tooOld !== null) {
  // Before anything that needs a newer Node (src/cli/node-floor.ts): one line, not a stack trace.
  process.stderr.write(`${tooOld}\n`);
  process.exitCode = 1;
} else if (process.sourceMapsEnabled) {
  // Node maps stack traces only of what its own loader compiled: under --enable-source-maps the
  // bundle is required as any module (its traces name src/ files and lines), with no code cache.
  createRequire(import.meta.url)(bundlePath);
} else {
  runWithCodeCache(getCompileCacheDir());
}

/**
 * Compiles the bundle with the code cache in `cacheDir` (Node's compile cache folder; none:
 * compiled as any module is), leaves the cache's writer for `serve` on `globalThis`, and runs it.
 */
function runWithCodeCache(cacheDir: string | undefined): void {
  const cachePath = cacheDir ? join(cacheDir, 'a2a-mailbridge-bundle.v8cache') : undefined;
  // Two locals, not one object: the cache's writer below lives as long as the process, and what it
  // refers to with it; an object would keep the bundle's text, a second copy beside the script's
  // own (0.75 MiB of the heap, docs/architecture.md, "Start-up and memory").
  const { source, identity } = readBundle();
  // Only a cache of this very file, whole (src/cli/code-cache-file.ts); none while the file changed under the read.
  const cached = cachePath && identity !== null ? readCodeCache(cachePath, identity) : undefined;
  // The bundle as CommonJS wraps a module (what Node's loader does with compileFunction).
  const script = new Script(`(function (exports, require, module, __filename, __dirname) { ${source}\n});`, {
    filename: bundlePath,
    cachedData: cached,
    // No `importModuleDynamically`: the bundle holds no `import()` (scripts/build.ts makes each a
    // `require`), and Node's hook for one in a vm.Script is experimental and warns when used.
  });
  // The writer keeps whether a cache was given, not the cache (0.7 MiB of array buffer).
  const hadCache = cached !== undefined;
  const writer: CodeCacheWriter = () => {
    if (!cachePath || identity === null || (hadCache && !script.cachedDataRejected)) return false;
    try {
      return writeCodeCache(cachePath, identity, script.createCachedData());
    } catch {
      return false;
    }
  };
  (globalThis as Record<symbol, unknown>)[CODE_CACHE_HOOK] = writer;
  const bundleModule = { exports: {} };
  const run = script.runInThisContext() as (exports: unknown, require: NodeJS.Require, module: { exports: unknown }, filename: string, dirname: string) => void;
  run.call(bundleModule.exports, bundleModule.exports, createRequire(bundlePath), bundleModule, bundlePath, dirname(bundlePath));
}

/**
 * The bundle's text, read through one descriptor, and the identity of the file it was read from
 * ({@link bundleIdentity}); the identity is null when the file changed during the read.
 */
function readBundle(): { source: string; identity: string | null } {
  const fd = openSync(bundlePath, 'r');
  try {
    const before = bundleIdentity(fstatSync(fd, { bigint: true }));
    const source = readFileSync(fd, 'utf8');
    return { source, identity: bundleIdentity(fstatSync(fd, { bigint: true })) === before ? before : null };
  } finally {
    closeSync(fd);
  }
}

/**
 * Which file, as written when: device, inode, size, and the modification and change times in ns.
 * Any write to the file, a rename over it or another copy of it changes it (the change time cannot
 * be set back; npm gives every file of a package the same modification time, so that alone would
 * not do).
 */
function bundleIdentity(s: BigIntStats): string {
  return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
}
