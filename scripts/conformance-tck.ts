/**
 * Runs the public A2A conformance kit's (a2aproject/a2a-tck) v0.3 mandatory suite against a running
 * a2a-mailbridge, with Debian's Python (`/usr/bin/python3` and the packages
 * `scripts/install-tck-deps.sh` installs), and writes the summary to
 * `scripts/conformance-tck.last.md`.
 *
 *   npx tsx scripts/conformance-tck.ts --tck /tmp/a2a-tck [--tck-rev eb1f804]
 *
 * The kit is referenced by path only; nothing of it is copied here. Use the last commit that still
 * has the v0.3 mandatory suite (`tests/mandatory/`, `run_tck.py --category mandatory`): the tip of
 * the kit's `0.3.x` branch (tag `0.3.0.beta4`, eb1f804). A work tree outside this repo, e.g.
 *   git --git-dir=<mirror of a2aproject/a2a-tck> archive eb1f804 | tar -x -C /tmp/a2a-tck
 *
 * It starts the world of scripts/tck/tck-world.ts (the demo's set-up with `mailbox.watch = true`,
 * a scripted cloud agent that mails DKIM-signed replies through every gate, and a loopback proxy
 * that adds the bridge's bearer), points the kit at the agent's path on the proxy, runs `run_tck.py --category mandatory --transports jsonrpc`, reads the per-test outcome
 * from pytest's own `--junitxml` (given through PYTEST_ADDOPTS) and stops everything.
 *
 * The v0.3 kit sends no Authorization header (its A2A_AUTH_* support, ADR-001, arrived with the
 * v1.0 line), so the proxy adds the bearer to requests that have none; it changes nothing else: no
 * card substitution, no body rewriting (bodies are piped). The kit reads the card the bridge
 * serves a caller without `A2A-Version`, the v0.3 card (docs/discovery.md).
 *
 * Options:
 *   --tck <dir>            the kit's work tree (required)
 *   --tck-rev <rev>        the kit commit to name in the report (default: `git rev-parse HEAD` in
 *                          <dir> when it is a git work tree, else <dir>/.tck-rev, else "unknown")
 *   --python <path>        default /usr/bin/python3 (Debian's, not a pyenv or venv one)
 *   --timeout-s <n>        a kit run still going after this is killed, default 900
 *   --out <file>           default scripts/conformance-tck.last.md
 *   --artifacts <dir>      where the kit output, JUnit XML and bridge log are kept (default: a new
 *                          folder under the system temp folder, printed at the end)
 *   --verbose              stream the kit's output to stdout as it runs
 *
 * Exit code: 0 when the kit ran and the report was written (whatever the tests said), 1 when the
 * kit run produced no results, 2 for a usage error.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { createLogger } from '../src/log.js';
import { attribution03 } from './tck/attribution.js';
import { parseJunit, type TestResult } from './tck/junit.js';
import { startTckWorld } from './tck/tck-world.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The Debian packages scripts/install-tck-deps.sh installs; their versions go into the report. */
const DEBIAN_PACKAGES = [
  'python3',
  'python3-pytest',
  'python3-pytest-asyncio',
  'python3-httpx',
  'python3-requests',
  'python3-responses',
  'python3-deepdiff',
  'python3-jsonschema',
  'python3-packaging',
  'python3-yaml',
  'python3-dotenv',
  'python3-grpcio',
  'python3-protobuf',
  'python3-openssl',
];

interface Options {
  tck: string;
  tckRev: string;
  python: string;
  timeoutS: number;
  out: string;
  artifacts: string;
  verbose: boolean;
}

function usage(message: string): never {
  process.stderr.write(`conformance-tck: ${message}\nusage: npx tsx scripts/conformance-tck.ts --tck <kit work tree> [--tck-rev REV] [--python /usr/bin/python3] [--timeout-s 900] [--out FILE] [--artifacts DIR] [--verbose]\n`);
  process.exit(2);
}

function parseArgs(argv: string[]): Options {
  const o: Partial<Options> = { python: '/usr/bin/python3', timeoutS: 900, verbose: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string => argv[++i] ?? usage(`${a} needs a value`);
    switch (a) {
      case '--tck': o.tck = resolve(value()); break;
      case '--tck-rev': o.tckRev = value(); break;
      case '--python': o.python = value(); break;
      case '--timeout-s': o.timeoutS = Number(value()); break;
      case '--out': o.out = resolve(value()); break;
      case '--artifacts': o.artifacts = resolve(value()); break;
      case '--verbose': o.verbose = true; break;
      default: usage(a === '-h' || a === '--help' ? 'help' : `unknown argument ${a}`);
    }
  }
  if (!o.tck) usage('--tck is required');
  if (!existsSync(join(o.tck, 'run_tck.py')) || !existsSync(join(o.tck, 'tests', 'mandatory'))) usage(`${o.tck} has no run_tck.py and tests/mandatory/: not a v0.3 a2a-tck work tree`);
  if (o.tck === REPO || o.tck.startsWith(`${REPO}/`)) usage('keep the kit outside this repository');
  if (!existsSync(o.python!)) usage(`${o.python} not found; run scripts/install-tck-deps.sh`);
  const rev = spawnSync('git', ['-C', o.tck, 'rev-parse', 'HEAD'], { encoding: 'utf8' });
  const revFile = join(o.tck, '.tck-rev');
  return {
    ...(o as Options),
    tckRev: o.tckRev ?? (rev.status === 0 ? rev.stdout.trim() : existsSync(revFile) ? readFileSync(revFile, 'utf8').trim() : 'unknown'),
    out: o.out ?? join(REPO, 'scripts', 'conformance-tck.last.md'),
    artifacts: o.artifacts ?? mkdtempSync(join(tmpdir(), 'a2a-tck-run-')),
  };
}

let running: ChildProcess | undefined;

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

/** Runs run_tck.py in its own process group (so pytest, its child, ends with it), through the bearer proxy. */
function runKit(o: Options, sutUrl: string, junit: string, outputFile: string): Promise<{ code: number | null; timedOut: boolean; command: string }> {
  const args = ['run_tck.py', '--sut-url', sutUrl, '--category', 'mandatory', '--transports', 'jsonrpc', '--verbose'];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PYTEST_ADDOPTS: `--junitxml=${junit} -o junit_family=xunit1 -p no:cacheprovider -rA`,
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONUNBUFFERED: '1',
  };
  for (const k of ['VIRTUAL_ENV', 'PYTHONPATH', 'PYTHONHOME', 'NO_PROXY', 'no_proxy', 'A2A_AUTH_TYPE', 'A2A_AUTH_TOKEN']) delete env[k];
  const command = `cd ${o.tck} && PYTEST_ADDOPTS='${env.PYTEST_ADDOPTS}' ${o.python} ${args.join(' ')}`;
  return new Promise((done) => {
    const log = createWriteStream(outputFile);
    const child = spawn(o.python, args, { cwd: o.tck, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    running = child;
    for (const s of [child.stdout, child.stderr]) {
      s.on('data', (c: Buffer) => {
        log.write(c);
        if (o.verbose) process.stdout.write(c);
      });
    }
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, o.timeoutS * 1000);
    child.on('close', (code) => {
      clearTimeout(timer);
      running = undefined;
      log.end(() => done({ code, timedOut, command }));
    });
  });
}

function debianVersions(): string[] {
  const r = spawnSync('dpkg-query', ['-W', '-f', '${Package} ${Version} ${db:Status-Abbrev}\n', ...DEBIAN_PACKAGES], { encoding: 'utf8' });
  const lines = r.stdout.split('\n').filter(Boolean);
  return DEBIAN_PACKAGES.map((p) => {
    const l = lines.find((x) => x.startsWith(`${p} `));
    return l && /\sii\s*$/.test(l) ? `${p} ${l.split(' ')[1]}` : `${p} (not installed)`;
  });
}

function oneLine(s: string, max = 220): string {
  const t = s.replace(/\s+/g, ' ').replace(/\|/g, '\\|').trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  mkdirSync(o.artifacts, { recursive: true });
  const started = new Date();
  const junit = join(o.artifacts, 'mandatory.junit.xml');
  const outputFile = join(o.artifacts, 'mandatory.kit-output.txt');
  const bridgeLog = join(o.artifacts, 'mandatory.bridge.log');
  rmSync(junit, { force: true });
  const logStream = pino.destination({ dest: bridgeLog, sync: true });
  const w = await startTckWorld({ log: createLogger('info', logStream), serverToml: '', proxy: 'reverse' });
  let run: Awaited<ReturnType<typeof runKit>>;
  const onSignal = (): void => {
    if (running) killGroup(running);
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const sutUrl = `${w.proxyUrl}${new URL(w.world.endpoint).pathname}`;
    process.stdout.write(`bridge ${w.world.endpoint}  kit → proxy ${sutUrl}  kit ${o.tck} @ ${o.tckRev}\n`);
    run = await runKit(o, sutUrl, junit, outputFile);
    await w.world.agent.idle();
  } finally {
    if (running) killGroup(running);
  }
  const store = w.world.app.bridge.ctx.store;
  const tasksByState = JSON.stringify(store.stats.tasksByState());
  const agentLine = `webhooks received by the agent ${w.world.agent.received.length}, replies mailed ${w.world.agent.replies.length}`;
  const proxied = { ...w.proxied };
  await w.stop();
  logStream.flushSync();
  logStream.end();
  const results: TestResult[] | null = existsSync(junit) ? parseJunit(readFileSync(junit, 'utf8')) : null;

  const py = spawnSync(o.python, ['--version'], { encoding: 'utf8' });
  const head = spawnSync('git', ['-C', REPO, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  const dirty = spawnSync('git', ['-C', REPO, 'status', '--porcelain', '--', 'src'], { encoding: 'utf8' }).stdout.trim() !== '';
  const L: string[] = [];
  L.push('# a2a-tck v0.3 mandatory suite against a2a-mailbridge');
  L.push('');
  L.push(`Written by \`scripts/conformance-tck.ts\` on ${started.toISOString()}. Bridge: a2a-mailbridge ${head}${dirty ? ' (with uncommitted changes under src/)' : ''}, the demo's set-up with \`mailbox.watch = true\` (the other keys at their defaults: a SendMessage answers once the webhook has answered), and a scripted cloud agent (scripts/tck/tck-world.ts).`);
  L.push(`Kit: a2aproject/a2a-tck at \`${o.tckRev}\` (work tree ${o.tck}), run with ${(py.stdout || py.stderr).trim()} (\`${o.python}\`) and Debian's packages:`);
  L.push('');
  for (const v of debianVersions()) L.push(`- ${v}`);
  L.push('');
  L.push('The kit sends no Authorization header (its A2A_AUTH_* support arrived with the v1.0 line): it is pointed at a loopback proxy that adds the bearer to requests that have none and changes nothing else (the card names the URL the bridge was reached by, so every call comes back through it) — no card substitution, no body rewriting. It reads the card the bridge serves to a caller without `A2A-Version` (the v0.3 card, docs/discovery.md).');
  L.push('');
  L.push('```');
  L.push(run.command);
  L.push('```');
  L.push('');
  L.push(`Kit exit ${run.timedOut ? 'timed out' : String(run.code)}. Proxy: ${proxied.requests} requests, bearer added to ${proxied.bearerAdded}. Bridge afterwards: tasks by state ${tasksByState}; ${agentLine}.`);
  L.push('');
  if (!results) {
    L.push(`No JUnit XML was written; see the kit output (${outputFile}).`);
  } else {
    const c = { total: results.length, passed: 0, failed: 0, error: 0, skipped: 0, xfailed: 0 };
    for (const r of results) c[r.outcome]++;
    L.push('| total | passed | failed | errors | skipped |');
    L.push('| ---: | ---: | ---: | ---: | ---: |');
    L.push(`| ${c.total} | ${c.passed} | ${c.failed} | ${c.error} | ${c.skipped + c.xfailed} |`);
    L.push('');
    L.push('| test | outcome | attribution / message |');
    L.push('| --- | --- | --- |');
    for (const r of results) L.push(`| \`${r.id}\` | ${r.outcome} | ${r.outcome === 'passed' ? '' : `${attribution03(r)} — ${oneLine(r.message)}`} |`);
  }
  L.push('');
  L.push(`Raw outputs were kept outside the repo in ${o.artifacts} (kit output, JUnit XML and bridge log).`);
  L.push('');
  writeFileSync(o.out, L.join('\n'));
  if (results) {
    const failed = results.filter((r) => r.outcome === 'failed' || r.outcome === 'error').length;
    process.stdout.write(`${results.length} tests: ${results.filter((r) => r.outcome === 'passed').length} passed, ${failed} failed or errors, ${results.filter((r) => r.outcome === 'skipped').length} skipped\n`);
  }
  process.stdout.write(`report: ${o.out}\nartifacts: ${o.artifacts}\n`);
  process.exitCode = results ? 0 : 1;
}

main().catch((err: unknown) => {
  if (running) killGroup(running);
  process.stderr.write(`conformance-tck: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
