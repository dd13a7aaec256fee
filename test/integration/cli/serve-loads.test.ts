import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundle } from '../../../scripts/build.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';
import { VERSION } from '../../../src/a2a/agent-card.js';
import { nodeTooOld } from '../../../src/cli/node-floor.js';

/**
 * What `serve` loads at start on a Maildir config, in the build that ships (scripts/build.ts, the
 * bundle `npm run build` writes): it says so itself, at debug level ('libraries loaded at start',
 * src/cli/serve.ts). The libraries of every start are inside the bundle, so only the SQLite addon
 * comes from node_modules; the IMAP client, the mail parsers, DKIM, the HTTP client of webhooks and
 * push notifications, the metrics library and the optional log destinations wait for their first
 * use (docs/architecture.md, "Start-up and memory"). Then it returns what start-up grew V8's heap
 * to ('start-up memory released', src/cli/heap-release.ts). With a compile cache folder, the first
 * start writes the code cache of its bundle and the next one starts from it (src/cli/entry.ts).
 */
let main: string;
let c: ConfigDir;
// tmp/ (git-ignored) may not exist yet in a fresh clone: service.test.ts makes it only in its beforeAll.
mkdirSync(resolve('tmp'), { recursive: true });
const out = mkdtempSync(join(resolve('tmp'), 'mb-build-'));
beforeAll(async () => {
  main = await bundle(out);
  c = makeConfigDir(minimalToml());
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
});
afterAll(() => {
  rmSync(out, { recursive: true, force: true });
  if (c) rmSync(c.dir, { recursive: true, force: true });
});

const BUILTINS_AT_EXIT = resolve('test/fixtures/builtins-at-exit.cjs');
const HEAP_AT_EXIT = resolve('test/fixtures/heap-at-exit.cjs');

/** What a `serve` still held at exit (test/fixtures/heap-at-exit.cjs), bytes. */
interface HeapAtExit {
  arrayBuffers: number;
  largeObjects: number;
}

interface Released {
  youngBefore: number;
  youngAfter: number;
  rssBefore: number;
  rssAfter: number;
}

/**
 * Starts the built `serve` at debug level (with `NODE_COMPILE_CACHE` = `cacheDir` when given) and
 * resolves with the packages its start-up line names, what its release line says, whether it
 * wrote the code cache, and the built-in modules it had loaded when it stopped, just after those
 * lines.
 */
function loadedAtStart(cacheDir?: string, entry = main): Promise<{ packages: string[]; released: Released; builtins: string[]; wroteCodeCache: boolean; heap: HeapAtExit }> {
  const env = { ...process.env };
  delete env.JOURNAL_STREAM;
  delete env.INVOCATION_ID;
  delete env.NODE_COMPILE_CACHE;
  // The test worker's IPC channel: inherited, it would make Node load child_process to open it.
  delete env.NODE_CHANNEL_FD;
  delete env.NODE_CHANNEL_SERIALIZATION_MODE;
  if (cacheDir) env.NODE_COMPILE_CACHE = cacheDir;
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, ['-r', BUILTINS_AT_EXIT, '-r', HEAP_AT_EXIT, entry, '--config', c.configPath, 'serve', '--log-level', 'debug'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    let packages: string[] | undefined;
    let released: Released | undefined;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no start-up lines within 30 s:\n${err}`));
    }, 30_000);
    const lineWith = (msg: string): string | undefined => err.split('\n').find((l) => l.includes(`"msg":"${msg}"`));
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString('utf8');
      const loaded = lineWith('libraries loaded at start');
      const release = lineWith('start-up memory released');
      if (!loaded || !release || packages) return;
      clearTimeout(timer);
      packages = (JSON.parse(loaded) as { packages: string[] }).packages;
      released = JSON.parse(release) as Released;
      child.kill('SIGTERM');
    });
    child.once('close', () => {
      const exitLine = err.split('\n').find((l) => l.startsWith('{"builtinsLoaded"'));
      const heapLine = err.split('\n').find((l) => l.startsWith('{"heapAtExit"'));
      if (!packages || !released || !exitLine || !heapLine) return reject(new Error(`no start-up lines or no exit lines:\n${err}`));
      const wroteCodeCache = lineWith('code cache of the start written') !== undefined;
      const heap = (JSON.parse(heapLine) as { heapAtExit: HeapAtExit }).heapAtExit;
      done({ packages, released, wroteCodeCache, heap, builtins: (JSON.parse(exitLine) as { builtinsLoaded: string[] }).builtinsLoaded });
    });
  });
}

describe('serve on a Maildir config, as built', () => {
  it('loads the store, the logger and the webhook signer from the bundle, and none of the libraries it does not use yet', async () => {
    const { packages, released, builtins } = await loadedAtStart();
    // Only the SQLite addon is read from node_modules; the logger, the config parser and the
    // webhook signer are in the bundle (each of their files was a path for the loader to resolve).
    expect(packages).toEqual(['better-sqlite3']);
    for (const lazy of ['imapflow', 'mailparser', 'mailauth', 'libmime', 'nodemailer', 'undici', 'prom-client', 'pino-pretty', 'pino-roll', '@a2a-js/sdk', 'dns-packet']) {
      expect(packages, lazy).not.toContain(lazy);
    }
    // Built-ins loaded by first use as well: DEFLATE packing (with its archive helpers, about 15
    // modules) and the DKIM resolver, both once imported at the top of a module by mistake;
    // perf_hooks (the global `performance`: src/monotonic.ts); fs/promises (the Maildir reads use
    // fs's callbacks); and `assert`, which bundled libraries require for paths serve does not take
    // (scripts/build.ts, LAZY_REQUIRES). Not child_process (node:cluster loads it when the server
    // listens) nor worker_threads (pino reads `isMainThread` from it at load).
    expect(builtins).toContain('http');
    for (const lazy of ['zlib', 'dns/promises', 'perf_hooks', 'fs/promises', 'assert']) expect(builtins, lazy).not.toContain(lazy);
    // Start-up grew the young generation past its first page; the release shrank it.
    expect(released.youngAfter).toBeLessThan(released.youngBefore);
    expect(released.rssAfter).toBeGreaterThan(0);
  });

  it('writes the code cache of its bundle on its first start in a compile cache folder, and starts from it on the next', async () => {
    const cacheDir = join(out, 'compile-cache');
    const first = await loadedAtStart(cacheDir);
    expect(first.wroteCodeCache).toBe(true);
    // Node names its folder after its version (module.getCompileCacheDir()); the file is private.
    const [versioned] = readdirSync(cacheDir);
    const file = join(cacheDir, versioned!, 'a2a-mailbridge-bundle.v8cache');
    expect(statSync(file).size).toBeGreaterThan(100_000);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // V8 accepted it (same source, version and flags): nothing to write again.
    const second = await loadedAtStart(cacheDir);
    expect(second.wroteCodeCache).toBe(false);
    expect(second.packages).toEqual(first.packages);
    const cacheBytes = statSync(file).size;
    // V8 checks a cache against the source's length only: a cache is used only for the very file
    // it was made from. A copy of the build, edited to print another version of the same length,
    // prints its own, with the original's cache in the folder, and again once its own cache was
    // made and it was edited once more in place.
    const copy = join(out, 'copy');
    cpSync(join(out, 'cli'), join(copy, 'cli'), { recursive: true });
    cpSync(join(out, 'package.json'), join(copy, 'package.json'));
    const copyMain = join(copy, 'cli', 'main.js');
    const edit = (to: string): void => {
      const bundleFile = join(copy, 'cli', 'bundle.js');
      const text = readFileSync(bundleFile, 'utf8');
      const at = text.search(/VERSION="[^"]*"/);
      expect(at).toBeGreaterThan(0);
      const old = /VERSION="[^"]*"/.exec(text.slice(at))![0];
      const next = `VERSION="${to}"`;
      expect(next.length).toBe(old.length);
      writeFileSync(bundleFile, text.slice(0, at) + next + text.slice(at + old.length));
    };
    const versionOf = (): string => spawnSync(process.execPath, [copyMain, '--version'], { env: { ...process.env, NODE_COMPILE_CACHE: cacheDir }, encoding: 'utf8' }).stdout.trim();
    const other = (n: number): string => `${VERSION.slice(0, -1)}${(Number(VERSION.at(-1)) + n) % 10}`;
    edit(other(1));
    expect(versionOf()).toBe(other(1));
    expect((await loadedAtStart(cacheDir, copyMain)).wroteCodeCache).toBe(true);
    edit(other(2));
    expect(versionOf()).toBe(other(2));
    // A FIFO in its place is not read (the read would block the start): the cache is written over it.
    rmSync(file);
    expect(spawnSync('mkfifo', ['-m', '600', file]).status).toBe(0);
    expect((await loadedAtStart(cacheDir)).wroteCodeCache).toBe(true);
    expect(statSync(file).isFile()).toBe(true);
    // A cache whose tail a power cut left zeroed: V8 would take it and crash (SIGSEGV) at every
    // start; it is not used, and the start writes a whole one.
    const good = readFileSync(file);
    const torn = Buffer.concat([good.subarray(0, good.length - 4096), Buffer.alloc(4096)]);
    writeFileSync(file, torn);
    expect((await loadedAtStart(cacheDir)).wroteCodeCache).toBe(true);
    expect(readFileSync(file).equals(torn)).toBe(false);
    // Without the folder there is no cache to write.
    const none = await loadedAtStart();
    expect(none.wroteCodeCache).toBe(false);
    // Once compiled, neither the cache nor a second copy of the bundle's text stays in memory (the
    // cache's writer, which lives as long as the process, once kept both: 1.4 MiB; src/cli/entry.ts).
    // A start from the cache holds no more array buffers than one without a cache; either holds
    // the bundle's text once, the script's own, beside V8's other large objects (130 KiB here).
    const bundleBytes = statSync(join(out, 'cli', 'bundle.js')).size;
    expect(second.heap.arrayBuffers - none.heap.arrayBuffers).toBeLessThan(cacheBytes / 2);
    for (const start of [second, none]) expect(start.heap.largeObjects).toBeLessThan(bundleBytes * 1.5);
  });

  it('started by a Node older than the floor (the first `node` on PATH, run through its #! line), says so and exits 1', (ctx) => {
    // A Node of the machine's own older than 22.19 (Debian 13's nodejs is 20), if there is one.
    const old = [...new Set([...(process.env.PATH ?? '').split(':'), '/usr/bin', '/usr/local/bin'])]
      .map((d) => join(d, 'node'))
      .find((n) => {
        const v = spawnSync(n, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout?.trim() ?? '';
        return /^\d+\.\d+/.test(v) && nodeTooOld(v, n, main) !== null;
      });
    if (old === undefined) return ctx.skip();
    const r = spawnSync(main, ['--version'], { encoding: 'utf8', env: { ...process.env, PATH: `${dirname(old)}:${process.env.PATH ?? ''}` } });
    expect(r.status, r.stderr).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(new RegExp(`^a2a-mailbridge needs Node\\.js 22\\.19 or newer; it was started by Node\\.js \\S+ \\(${old.replace(/[./]/g, '\\$&')}\\)\\. The command runs with the first \`node\` on your PATH`));
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  });

  it('is compiled by the loader of Node under --enable-source-maps, so stack traces name src/ files', () => {
    const fixture = resolve('test/fixtures/source-map-at-exit.cjs');
    const mapped = join(out, 'cli', 'bundle.js');
    const run = (flags: string[]): { sourceMap: boolean; aSource: string | null } => {
      const r = spawnSync(process.execPath, [...flags, '-r', fixture, main, '--version'], { env: { ...process.env, MB_MAPPED_FILE: mapped }, encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      return JSON.parse(r.stderr.trim().split('\n').at(-1)!) as { sourceMap: boolean; aSource: string | null };
    };
    const withMaps = run(['--enable-source-maps']);
    expect(withMaps.sourceMap).toBe(true);
    expect(withMaps.aSource).toMatch(/\/src\/cli\/[\w-]+\.ts$/);
    // Without the flag Node reads no map (the code cache path, src/cli/entry.ts).
    expect(run([]).sourceMap).toBe(false);
  });

  it('runs the demo round trip as built (the mail parsers and DKIM loaded by their first use), with no warning', async () => {
    const child = spawn(process.execPath, [main, 'demo'], { env: { ...process.env, NODE_COMPILE_CACHE: join(out, 'compile-cache') }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const [code] = (await once(child, 'close')) as [number];
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('demo: OK');
    // Node's warnings (e.g. an experimental loader hook) go to stderr: there are none.
    expect(stderr).not.toMatch(/Warning/);
  });

  it('logs to log.file through pino-roll as built, with no warning', async () => {
    const d = makeConfigDir(`${minimalToml()}\n[log]\nfile = "logs/bridge.log"\n`);
    try {
      for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(d.dir, 'Maildir', sub), { recursive: true });
      const env = { ...process.env };
      delete env.JOURNAL_STREAM;
      delete env.INVOCATION_ID;
      const child = spawn(process.execPath, [main, '--config', d.configPath, 'serve'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
        if (stderr.includes('is serving')) child.kill('SIGTERM');
      });
      await once(child, 'close');
      expect(stderr).toContain('is serving');
      expect(stderr).not.toMatch(/Warning/);
      const logs = readdirSync(join(d.dir, 'logs'));
      expect(logs.some((f) => readFileSync(join(d.dir, 'logs', f), 'utf8').includes('a2a-mailbridge listening'))).toBe(true);
    } finally {
      rmSync(d.dir, { recursive: true, force: true });
    }
  });
});
