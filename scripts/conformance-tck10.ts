/**
 * Runs the public A2A conformance kit v1.0 (a2aproject/a2a-tck, branch `1.0-dev`) against
 * a2a-mailbridge and a scripted cloud agent (scripts/tck/tck-world.ts), and writes the results per
 * category with every remaining failure attributed to `scripts/conformance-tck10.last.md`.
 *
 *   bash scripts/install-tck-deps.sh --v1 /tmp/tck-venv      # a venv with the kit's Python deps
 *   npx tsx scripts/conformance-tck10.ts --tck /tmp/a2a-tck-1.0 --python /tmp/tck-venv/bin/python \
 *     [--before scripts/conformance-tck10.before.json] [--json FILE] [--label after]
 *
 * The kit cannot send a bearer: its HTTP clients go through a forward proxy (HTTP_PROXY) that adds
 * the bridge's bearer to requests for the bridge that have none and forwards everything else
 * untouched (no card substitution, no body rewriting). The kit fetches the card from the bridge's
 * root and tests every interface the card declares. pytest runs directly (the kit's run_tck.py also asks for
 * pytest-html, which only renders a report), with the kit's own `--compatibility-report`.
 *
 * Options:
 *   --tck <dir>          the kit's work tree (e.g. `git --git-dir=<mirror> archive 1.0-dev | tar -x -C <dir>`)
 *   --tck-rev <rev>      the kit commit named in the report (default: read from <dir>/.tck-rev, else "unknown")
 *   --python <path>      the interpreter with the kit's deps (default /tmp/tck-venv/bin/python)
 *   --label <text>       this run's name in the report (default "after")
 *   --before <json>      a previous run's --json output, shown beside this one
 *   --json <file>        also write this run's per-test results as JSON
 *   --baseline           config for code before streaming and push (no server keys it does not know)
 *   --timeout-s <n>      kill the kit after this (default 1500)
 *   --out <file>         default scripts/conformance-tck10.last.md
 *   --artifacts <dir>    kit output, JUnit XML, compatibility report, bridge log (default: a temp folder)
 */
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { createLogger } from '../src/log.js';
import { attribution10 } from './tck/attribution.js';
import { parseJunit, type TestResult } from './tck/junit.js';
import { startTckWorld } from './tck/tck-world.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');

interface Options {
  tck: string;
  tckRev: string;
  python: string;
  label: string;
  before?: string;
  json?: string;
  baseline: boolean;
  timeoutS: number;
  out: string;
  artifacts: string;
}

function usage(msg: string): never {
  process.stderr.write(`conformance-tck10: ${msg}\nusage: npx tsx scripts/conformance-tck10.ts --tck <dir> [--python P] [--label L] [--before JSON] [--json FILE] [--baseline] [--out FILE]\n`);
  process.exit(2);
}

function parseArgs(argv: string[]): Options {
  const o: Partial<Options> = { python: '/tmp/tck-venv/bin/python', label: 'after', baseline: false, timeoutS: 1500 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const v = (): string => argv[++i] ?? usage(`${a} needs a value`);
    switch (a) {
      case '--tck': o.tck = resolve(v()); break;
      case '--tck-rev': o.tckRev = v(); break;
      case '--python': o.python = v(); break;
      case '--label': o.label = v(); break;
      case '--before': o.before = resolve(v()); break;
      case '--json': o.json = resolve(v()); break;
      case '--baseline': o.baseline = true; break;
      case '--timeout-s': o.timeoutS = Number(v()); break;
      case '--out': o.out = resolve(v()); break;
      case '--artifacts': o.artifacts = resolve(v()); break;
      default: usage(`unknown argument ${a}`);
    }
  }
  if (!o.tck || !existsSync(join(o.tck, 'tests', 'compatibility'))) usage('--tck must be a work tree of the kit 1.0-dev (with tests/compatibility/)');
  if (!existsSync(o.python!)) usage(`${o.python} not found: run scripts/install-tck-deps.sh --v1 <venv>`);
  const revFile = join(o.tck, '.tck-rev');
  return {
    ...(o as Options),
    tckRev: o.tckRev ?? (existsSync(revFile) ? readFileSync(revFile, 'utf8').trim() : 'unknown'),
    out: o.out ?? join(REPO, 'scripts', 'conformance-tck10.last.md'),
    artifacts: o.artifacts ?? mkdtempSync(join(tmpdir(), 'a2a-tck10-')),
  };
}

/** The category of a test: its module under tests/compatibility (e.g. `core_operations/test_push_notifications`). */
export function categoryOf(id: string): string {
  return id.replace(/^tests\/compatibility\//, '').replace(/\.py::.*$/, '');
}

type Counts = { total: number; passed: number; failed: number; skipped: number };

function byCategory(results: TestResult[]): Map<string, Counts> {
  const m = new Map<string, Counts>();
  for (const r of results) {
    const c = m.get(categoryOf(r.id)) ?? { total: 0, passed: 0, failed: 0, skipped: 0 };
    c.total += 1;
    if (r.outcome === 'passed') c.passed += 1;
    else if (r.outcome === 'skipped' || r.outcome === 'xfailed') c.skipped += 1;
    else c.failed += 1;
    m.set(categoryOf(r.id), c);
  }
  return m;
}

function oneLine(s: string, max = 200): string {
  const t = s.replace(/\s+/g, ' ').replace(/\|/g, '\\|').trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

async function run(o: Options): Promise<{ results: TestResult[] | null; exit: number | null; proxied: { requests: number; bearerAdded: number }; stats: string }> {
  const logFile = join(o.artifacts, `${o.label}.bridge.log`);
  const logStream = pino.destination({ dest: logFile, sync: true });
  const serverToml = o.baseline
    ? 'wait_budget_s = 8\ncaller_timeout_s = 60'
    : // example.com: the kit's push config CRUD tests register https://example.com/… (never delivered: those tasks are finished).
      'wait_budget_s = 8\ncaller_timeout_s = 60\npush_allow_hosts = ["example.com"]\nstream_keepalive_s = 5';
  const w = await startTckWorld({ log: createLogger('info', logStream), serverToml, proxy: 'forward' });
  const junit = join(o.artifacts, `${o.label}.junit.xml`);
  const output = join(o.artifacts, `${o.label}.kit-output.txt`);
  const args = ['-m', 'pytest', 'tests/compatibility/', `--sut-host=${w.world.app.server.baseUrl}`, '--tb=short', '-v', '-p', 'no:cacheprovider', `--junitxml=${junit}`, '-o', 'junit_family=xunit1', `--compatibility-report=${join(o.artifacts, `${o.label}.compatibility`)}`];
  const env: NodeJS.ProcessEnv = { ...process.env, HTTP_PROXY: w.proxyUrl, http_proxy: w.proxyUrl, PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1' };
  for (const k of ['NO_PROXY', 'no_proxy', 'HTTPS_PROXY', 'https_proxy', 'ALL_PROXY', 'all_proxy', 'PYTHONPATH', 'PYTHONHOME']) delete env[k];
  process.stdout.write(`[${o.label}] bridge ${w.world.app.server.baseUrl}  proxy ${w.proxyUrl}  kit ${o.tck} @ ${o.tckRev}\n`);
  const exit = await new Promise<number | null>((done) => {
    const log = createWriteStream(output);
    const child = spawn(o.python, args, { cwd: o.tck, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(log);
    child.stderr.pipe(log);
    const timer = setTimeout(() => child.pid !== undefined && process.kill(-child.pid, 'SIGKILL'), o.timeoutS * 1000);
    child.on('close', (code) => {
      clearTimeout(timer);
      log.end(() => done(code));
    });
  });
  await w.world.agent.idle();
  const store = w.world.app.bridge.ctx.store;
  const stats = `tasks by state ${JSON.stringify(store.stats.tasksByState())}; webhooks received by the agent ${w.world.agent.received.length}, replies mailed ${w.world.agent.replies.length}`;
  const proxied = { ...w.proxied };
  await w.stop();
  logStream.flushSync();
  logStream.end();
  return { results: existsSync(junit) ? parseJunit(readFileSync(junit, 'utf8')) : null, exit, proxied, stats };
}

function table(L: string[], label: string, results: TestResult[]): void {
  L.push(`| category (${label}) | total | pass | fail | skip |`);
  L.push('| --- | ---: | ---: | ---: | ---: |');
  const t: Counts = { total: 0, passed: 0, failed: 0, skipped: 0 };
  for (const [cat, c] of [...byCategory(results)].sort()) {
    L.push(`| ${cat} | ${c.total} | ${c.passed} | ${c.failed} | ${c.skipped} |`);
    for (const k of ['total', 'passed', 'failed', 'skipped'] as const) t[k] += c[k];
  }
  L.push(`| **all** | ${t.total} | ${t.passed} | ${t.failed} | ${t.skipped} |`);
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  mkdirSync(o.artifacts, { recursive: true });
  const started = new Date();
  const r = await run(o);
  if (!r.results) {
    process.stderr.write(`no JUnit XML; see ${o.artifacts}\n`);
    process.exitCode = 1;
    return;
  }
  if (o.json) writeFileSync(o.json, `${JSON.stringify({ label: o.label, tckRev: o.tckRev, at: started.toISOString(), bridge: gitHead(), results: r.results }, null, 1)}\n`);
  const before = o.before && existsSync(o.before) ? (JSON.parse(readFileSync(o.before, 'utf8')) as { label: string; bridge: string; at: string; results: TestResult[] }) : undefined;
  const L: string[] = [];
  L.push('# a2a-tck v1.0 (branch 1.0-dev) against a2a-mailbridge');
  L.push('');
  L.push(`Written by \`scripts/conformance-tck10.ts\` on ${started.toISOString()}. Bridge ${gitHead()}; kit a2aproject/a2a-tck \`${o.tckRev}\`, run with \`${pythonVersion(o.python)}\` (\`pytest tests/compatibility/\`, every interface the card declares).`);
  L.push('The kit reaches the bridge through a forward proxy (HTTP_PROXY) that adds the bearer to requests for the bridge that have none and forwards everything else untouched; the cloud agent is scripted by message-id prefix and replies with DKIM-signed mail through every gate (scripts/tck/tck-world.ts).');
  L.push(`Bridge config beyond the demo's: \`mailbox.watch = true\`, \`server.wait_budget_s = 8\` (a blocking SendMessage waits for the scripted reply), \`caller_timeout_s = 60\`${o.baseline ? '' : ', `push_allow_hosts = ["example.com"]` (the kit registers push configs at https://example.com/…), `stream_keepalive_s = 5`'}.`);
  L.push(`This run (${o.label}): kit exit ${r.exit}; proxy forwarded ${r.proxied.requests} requests, bearer added to ${r.proxied.bearerAdded}; ${r.stats}.`);
  L.push('');
  if (before) {
    L.push(`## Before: ${before.label} (bridge ${before.bridge}, ${before.at})`);
    L.push('');
    table(L, before.label, before.results);
    L.push('');
  }
  L.push(`## ${o.label}`);
  L.push('');
  table(L, o.label, r.results);
  L.push('');
  L.push('## Every test that did not pass, attributed');
  L.push('');
  L.push('| test | outcome | attribution | kit message |');
  L.push('| --- | --- | --- | --- |');
  for (const t of r.results.filter((x) => x.outcome !== 'passed')) {
    L.push(`| \`${t.id.replace(/^tests\/compatibility\//, '')}\` | ${t.outcome} | ${attribution10(t)} | ${oneLine(t.message)} |`);
  }
  L.push('');
  L.push(`Raw outputs (kit output, JUnit XML, the kit's compatibility report, bridge log): ${o.artifacts}`);
  L.push('');
  writeFileSync(o.out, L.join('\n'));
  const c = byCategory(r.results);
  let pass = 0;
  let fail = 0;
  let skip = 0;
  for (const v of c.values()) {
    pass += v.passed;
    fail += v.failed;
    skip += v.skipped;
  }
  process.stdout.write(`[${o.label}] ${r.results.length} tests: ${pass} passed, ${fail} failed, ${skip} skipped\nreport: ${o.out}\nartifacts: ${o.artifacts}\n`);
}

function gitHead(): string {
  const head = spawnSync('git', ['-C', REPO, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  const dirty = spawnSync('git', ['-C', REPO, 'status', '--porcelain', '--', 'src'], { encoding: 'utf8' }).stdout.trim() !== '';
  return `${head}${dirty ? ' (with uncommitted changes under src/)' : ''}`;
}

function pythonVersion(python: string): string {
  const r = spawnSync(python, ['--version'], { encoding: 'utf8' });
  return (r.stdout || r.stderr).trim();
}

main().catch((err: unknown) => {
  process.stderr.write(`conformance-tck10: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
