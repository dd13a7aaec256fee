/**
 * Runs the public A2A conformance kit's (a2aproject/a2a-tck) v0.3 mandatory suite against a running
 * a2a-mailbridge, with Debian's Python (`/usr/bin/python3` and the packages
 * `scripts/install-tck-deps.sh` installs), and writes the summary to
 * `scripts/conformance-tck.last.md`.
 *
 *   npx tsx scripts/conformance-tck.ts --tck /tmp/a2a-tck [--tck-rev eb1f804] [--mode both|as-is|adapted]
 *
 * The kit is referenced by path only; nothing of it is copied here. Use the last commit that still
 * has the v0.3 mandatory suite (`tests/mandatory/`, `run_tck.py --category mandatory`): the tip of
 * the kit's `0.3.x` branch (tag `0.3.0.beta4`, eb1f804); on `main` the suite moved to v1.0 RC with
 * d36f441, so b03fefc is main's last v0.3 commit. A work tree outside this repo, e.g.
 *   git --git-dir=<mirror of a2aproject/a2a-tck> archive eb1f804 | tar -x -C /tmp/a2a-tck
 *
 * For each mode it starts, like `a2a-mailbridge demo` (src/demo/round-trip.ts): a temporary config
 * folder with 0600 secret files, a DNS zone serving the agent's DKIM key, the simulated cloud agent
 * (verifies the webhook, mails a DKIM-signed reply into a Maildir after --reply-delay-ms), and the
 * bridge with `mailbox.watch = true` (fs.watch applies each reply as it lands, so a task completes
 * about --reply-delay-ms after it was sent, with no poll needed). It prints the bridge URL and
 * bearer, runs `run_tck.py --category mandatory --transports jsonrpc`, reads the per-test outcome
 * from a JUnit XML file (pytest's own `--junitxml`, given through PYTEST_ADDOPTS), and stops
 * everything (the kit's process group, the bridge, the agent, the zone) and removes the config.
 *
 * Modes, because the v0.3 kit cannot talk to the bridge as it is:
 * - `as-is`: the kit points straight at the bridge. The bearer is put in the environment the way
 *   the kit's ADR-001 says (A2A_AUTH_TYPE=bearer, A2A_AUTH_TOKEN), but that support arrived with
 *   the v1.0 line (d36f441); the v0.3 kit sends no Authorization header at all. It also reads the
 *   card at the root `/.well-known/agent-card.json`, where the bridge serves its v1.0 card
 *   (supportedInterfaces), which the v0.3 kit does not understand; the bridge's v0.3 card is at
 *   `/.well-known/agent.json`, which the kit only tries when agent-card.json fails.
 * - `adapted`: the kit points at a loopback adapter in this script that forwards every request to
 *   the bridge unchanged except: (1) it adds `Authorization: Bearer <bearer>` to a request that has
 *   no Authorization header (what ADR-001's injection does in the v1.0 kit; a header the test sets
 *   itself is kept), and (2) it answers `/.well-known/agent-card.json` with the bridge's own v0.3
 *   card from `/.well-known/agent.json`. Card URLs naming the bridge are rewritten to the adapter
 *   so the kit's calls go through it. The bridge's answers are otherwise passed on byte for byte.
 *
 * Options:
 *   --tck <dir>            the kit's work tree (required)
 *   --tck-rev <rev>        the kit commit to name in the report (default: `git rev-parse HEAD` in
 *                          <dir> when it is a git work tree, else "unknown")
 *   --mode <m>             both (default), as-is or adapted
 *   --python <path>        default /usr/bin/python3 (Debian's, not a pyenv or venv one)
 *   --reply-delay-ms <n>   how long the simulated agent "works" before mailing, default 500
 *   --timeout-s <n>        a kit run still going after this is killed, default 900
 *   --out <file>           default scripts/conformance-tck.last.md
 *   --artifacts <dir>      where the kit output, JUnit XML and bridge log are kept (default: a new
 *                          folder under the system temp folder, printed at the end)
 *   --verbose              stream the kit's output to stdout as it runs
 *
 * Exit code: 0 when every requested mode ran and the report was written (whatever the tests
 * said), 1 when a kit run did not produce results, 2 for a usage error.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import type { App } from '../src/app.js';
import type { CloudAgent } from '../src/demo/cloud-agent.js';
import { startDemoWorld } from '../src/demo/world.js';
import { createLogger } from '../src/log.js';

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

type Mode = 'as-is' | 'adapted';

interface Options {
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

function parseArgs(argv: string[]): Options {
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


/** Everything one mode started; `stop()` ends it all and removes the config folder. */
interface Stack {
  dir: string;
  bridgeBase: string;
  endpoint: string;
  bearer: string;
  app: App;
  agent: CloudAgent;
  stop(): Promise<void>;
}

/** The demo's set-up (src/demo/world.ts), with `mailbox.watch = true` and the bridge log written to `logFile`. */
async function startStack(o: Options, logFile: string): Promise<Stack> {
  const logStream = pino.destination({ dest: logFile, sync: true });
  const world = await startDemoWorld({
    name: 'a2a-mailbridge-tck',
    log: createLogger('info', logStream),
    replyDelayMs: o.replyDelayMs,
    mailboxToml: 'watch = true\nwatch_tick_s = 1',
    // The kit sends far more new tasks a minute than a person would (agents.max_open_tasks, max_per_minute).
    agentToml: 'max_open_tasks = 10000',
    webhookToml: 'max_per_minute = 10000',
  }).catch((err: unknown) => {
    logStream.end();
    throw err;
  });
  const stop = async (): Promise<void> => {
    await world.stop();
    logStream.flushSync();
    logStream.end();
  };
  return { dir: world.dir, bridgeBase: world.app.server.baseUrl, endpoint: world.endpoint, bearer: world.bearer, app: world.app, agent: world.agent, stop };
}

/** One request the adapter saw, for the report's evidence section. */
interface AdapterHit {
  method: string;
  path: string;
  injected: boolean;
  status: number;
}

/**
 * The `adapted` mode's loopback adapter (see the header comment). Requests are forwarded to
 * `bridgeBase` with the Host header the bridge expects; only the two documented changes are made.
 */
async function startAdapter(bridgeBase: string, bearer: string): Promise<{ base: string; hits: AdapterHit[]; close(): Promise<void> }> {
  const target = new URL(bridgeBase);
  const hits: AdapterHit[] = [];
  let base = '';
  const rewrite = (body: Buffer): Buffer => Buffer.from(body.toString('utf8').split(bridgeBase).join(base));

  const forward = (req: IncomingMessage, res: ServerResponse, path: string, mapBody?: (b: Buffer) => Buffer): void => {
    const headers = { ...req.headers, host: target.host };
    const injected = headers.authorization === undefined;
    if (injected) headers.authorization = `Bearer ${bearer}`;
    const hit: AdapterHit = { method: req.method ?? '?', path: req.url ?? '/', injected, status: 0 };
    hits.push(hit);
    const up = httpRequest({ host: target.hostname, port: target.port, method: req.method, path, headers }, (r) => {
      hit.status = r.statusCode ?? 0;
      if (!mapBody) {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
        return;
      }
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () => {
        const body = mapBody(Buffer.concat(chunks));
        const h = { ...r.headers, 'content-length': String(body.length) };
        delete h['transfer-encoding'];
        res.writeHead(r.statusCode ?? 502, h);
        res.end(body);
      });
    });
    up.on('error', (err) => {
      hit.status = 502;
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: `adapter: ${err.message}` }));
    });
    req.pipe(up);
  };

  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://adapter.invalid').pathname;
    if (path === '/.well-known/agent-card.json') return forward(req, res, '/.well-known/agent.json', rewrite);
    if (path.endsWith('/.well-known/agent-card.json') || path.endsWith('/.well-known/agent.json')) return forward(req, res, req.url ?? '/', rewrite);
    forward(req, res, req.url ?? '/');
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => ok());
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    hits,
    close: () =>
      new Promise<void>((ok) => {
        server.close(() => ok());
        server.closeAllConnections();
      }),
  };
}

/** One test's outcome, read from the JUnit XML. */
interface TestResult {
  id: string;
  outcome: 'passed' | 'failed' | 'error' | 'skipped';
  message: string;
  seconds: number;
}

function xmlText(s: string): string {
  return s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_, n: string) => String.fromCodePoint(parseInt(n, 16)))
    .replace(/&amp;/g, '&');
}

function attr(tag: string, name: string): string {
  const m = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
  return m ? xmlText(m[1]!) : '';
}

/** pytest's JUnit XML: one `<testcase>` per test, with a `<failure>`, `<error>` or `<skipped>` child. */
export function parseJunit(xml: string): TestResult[] {
  const out: TestResult[] = [];
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const head = m[1]!;
    const inner = m[3] ?? '';
    const cls = attr(head, 'classname');
    const name = attr(head, 'name');
    const file = attr(head, 'file');
    // classname is the module path plus the class, if any: tests.mandatory.x.test_y[.TestZ]
    const modulePath = file.replace(/\.py$/, '').split('/').join('.');
    const klass = file && cls.startsWith(`${modulePath}.`) ? cls.slice(modulePath.length + 1) : '';
    const id = file ? [file, klass, name].filter(Boolean).join('::') : `${cls}::${name}`;
    const child = /<(failure|error|skipped)\b([^>]*?)(?:\/>|>([\s\S]*?)<\/\1>)/.exec(inner);
    const kind = child?.[1];
    const outcome: TestResult['outcome'] = kind === 'failure' ? 'failed' : kind === 'error' ? 'error' : kind === 'skipped' ? 'skipped' : 'passed';
    // A failing test that also errors in teardown is a failure; keep the first message.
    const failure = /<failure\b([^>]*?)(?:\/>|>)/.exec(inner);
    const message = failure ? attr(failure[1]!, 'message') : child ? attr(child[2]!, 'message') || xmlText(child[3] ?? '').trim() : '';
    out.push({ id, outcome: failure ? 'failed' : outcome, message, seconds: Number(attr(head, 'time')) || 0 });
  }
  return out;
}

interface ModeResult {
  mode: Mode;
  command: string;
  exitCode: number | null;
  timedOut: boolean;
  results: TestResult[] | null;
  outputFile: string;
  bridgeLog: string;
  tasksByState: Record<string, number>;
  ledger: Record<string, number>;
  webhooks: number;
  replies: number;
  adapterHits: AdapterHit[];
  injectedAuth: number;
}

/** Runs run_tck.py in its own process group so that pytest, its child, is killed with it. */
function runKit(o: Options, sutUrl: string, bearer: string, junit: string, outputFile: string): Promise<{ code: number | null; timedOut: boolean; command: string }> {
  const args = ['run_tck.py', '--sut-url', sutUrl, '--category', 'mandatory', '--transports', 'jsonrpc', '--verbose'];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // The kit's documented auth injection (ADR-001); honoured from its v1.0 line on, ignored by v0.3.
    A2A_AUTH_TYPE: 'bearer',
    A2A_AUTH_TOKEN: bearer,
    PYTEST_ADDOPTS: `--junitxml=${junit} -o junit_family=xunit1 -p no:cacheprovider -rA`,
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONUNBUFFERED: '1',
  };
  delete env.VIRTUAL_ENV;
  delete env.PYTHONPATH;
  delete env.PYTHONHOME;
  const command = `cd ${o.tck} && A2A_AUTH_TYPE=bearer A2A_AUTH_TOKEN=<bearer> PYTEST_ADDOPTS='${env.PYTEST_ADDOPTS}' ${o.python} ${args.join(' ')}`;
  return new Promise((done) => {
    const log = createWriteStream(outputFile);
    const child: ChildProcess = spawn(o.python, args, { cwd: o.tck, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    running = child;
    for (const s of [child.stdout!, child.stderr!]) {
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

let running: ChildProcess | undefined;

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    /* already gone */
  }
  setTimeout(() => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }, 3000).unref();
}

async function runMode(o: Options, mode: Mode): Promise<ModeResult> {
  const bridgeLog = join(o.artifacts, `${mode}.bridge.log`);
  const junit = join(o.artifacts, `${mode}.junit.xml`);
  const outputFile = join(o.artifacts, `${mode}.kit-output.txt`);
  rmSync(junit, { force: true });
  const stack = await startStack(o, bridgeLog);
  let adapter: Awaited<ReturnType<typeof startAdapter>> | undefined;
  try {
    let sutUrl = stack.endpoint;
    if (mode === 'adapted') {
      adapter = await startAdapter(stack.bridgeBase, stack.bearer);
      sutUrl = `${adapter.base}${new URL(stack.endpoint).pathname}`;
    }
    process.stdout.write(`\n[${mode}] bridge   ${stack.endpoint}  (card ${stack.bridgeBase}/.well-known/agent-card.json)\n`);
    process.stdout.write(`[${mode}] bearer   ${stack.bearer}\n`);
    process.stdout.write(`[${mode}] agent    ${stack.agent.url}  (replies after ${o.replyDelayMs} ms; mailbox.watch = true)\n`);
    if (adapter) process.stdout.write(`[${mode}] adapter  ${adapter.base}  (adds the bearer when absent; serves the v0.3 card at agent-card.json)\n`);
    process.stdout.write(`[${mode}] kit      ${o.tck} @ ${o.tckRev}  → --sut-url ${sutUrl}\n`);
    const run = await runKit(o, sutUrl, stack.bearer, junit, outputFile);
    // Let replies still in flight land, so the store's counts are final.
    await stack.agent.idle();
    await new Promise((r) => setTimeout(r, 1500));
    const db = stack.app.bridge.ctx.store;
    const tasksByState: Record<string, number> = db.stats.tasksByState();
    const ledger: Record<string, number> = {};
    for (const l of db.ledger.query({ limit: 100000 })) ledger[l.verdict] = (ledger[l.verdict] ?? 0) + 1;
    const results = existsSync(junit) ? parseJunit(readFileSync(junit, 'utf8')) : null;
    const hits = adapter?.hits ?? [];
    return {
      mode,
      command: run.command,
      exitCode: run.code,
      timedOut: run.timedOut,
      results,
      outputFile,
      bridgeLog,
      tasksByState,
      ledger,
      webhooks: stack.agent.received.length,
      replies: stack.agent.replies.length,
      adapterHits: hits,
      injectedAuth: hits.filter((h) => h.injected).length,
    };
  } finally {
    if (running) killGroup(running);
    await adapter?.close();
    await stack.stop();
  }
}

function debianVersions(): string[] {
  const r = spawnSync('dpkg-query', ['-W', '-f', '${Package} ${Version} ${db:Status-Abbrev}\n', ...DEBIAN_PACKAGES], { encoding: 'utf8' });
  const lines = r.stdout.split('\n').filter(Boolean);
  return DEBIAN_PACKAGES.map((p) => {
    const l = lines.find((x) => x.startsWith(`${p} `));
    return l && /\sii\s*$/.test(l) ? `${p} ${l.split(' ')[1]}` : `${p} (not installed)`;
  });
}

function counts(results: TestResult[]): Record<TestResult['outcome'] | 'total', number> {
  const c = { total: results.length, passed: 0, failed: 0, error: 0, skipped: 0 };
  for (const r of results) c[r.outcome]++;
  return c;
}

function oneLine(s: string, max = 220): string {
  const t = s.replace(/\s+/g, ' ').replace(/\|/g, '\\|').trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

function report(o: Options, modes: ModeResult[], started: Date): string {
  const py = spawnSync(o.python, ['--version'], { encoding: 'utf8' });
  const head = spawnSync('git', ['-C', REPO, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  const dirty = spawnSync('git', ['-C', REPO, 'status', '--porcelain', '--', 'src'], { encoding: 'utf8' }).stdout.trim() !== '';
  const L: string[] = [];
  L.push('# a2a-tck v0.3 mandatory suite against a2a-mailbridge');
  L.push('');
  L.push(`Written by \`scripts/conformance-tck.ts\` on ${started.toISOString()}. Bridge: a2a-mailbridge ${head}${dirty ? ' (with uncommitted changes under src/)' : ''}, configured like \`npm run demo\` with \`mailbox.watch = true\`; simulated cloud agent replying after ${o.replyDelayMs} ms.`);
  L.push(`Kit: a2aproject/a2a-tck at \`${o.tckRev}\` (work tree ${o.tck}), run with ${(py.stdout || py.stderr).trim()} (\`${o.python}\`) and Debian's packages:`);
  L.push('');
  for (const v of debianVersions()) L.push(`- ${v}`);
  L.push('');
  L.push('Not in Debian bookworm (and not needed for a JSON-RPC-only SUT): `googleapis-common-protos` (the kit\'s gRPC stubs import `google.api.*`; with Debian\'s protobuf 3.21 they need protobuf ≥ 5.26 anyway), `pytest-json-report` (only `--compliance-report`), `pytest-html` (only `--report`), `types-requests` (type stubs). `grpcio-tools` is only for regenerating stubs. Per-test results are read from pytest\'s built-in `--junitxml` instead of `pytest-json-report`.');
  L.push('');
  L.push('## Summary');
  L.push('');
  L.push('| mode | total | passed | failed | errors | skipped | kit exit |');
  L.push('| --- | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const m of modes) {
    const c = m.results ? counts(m.results) : undefined;
    L.push(`| ${m.mode} | ${c?.total ?? '–'} | ${c?.passed ?? '–'} | ${c?.failed ?? '–'} | ${c?.error ?? '–'} | ${c?.skipped ?? '–'} | ${m.timedOut ? 'timed out' : String(m.exitCode)} |`);
  }
  L.push('');
  L.push('- **as-is**: the kit talks to the bridge directly. The v0.3 kit sends no Authorization header (its A2A_AUTH_* support, ADR-001, exists only from the v1.0 line on) and reads the v1.0 card the bridge serves at `/.well-known/agent-card.json`.');
  L.push('- **adapted**: the kit talks to a loopback adapter that adds the bridge bearer to requests without an Authorization header and serves the bridge\'s own v0.3 card (from `/.well-known/agent.json`) at `/.well-known/agent-card.json`; everything else is forwarded unchanged.');
  for (const m of modes) {
    L.push('');
    L.push(`## ${m.mode}`);
    L.push('');
    L.push('```');
    L.push(m.command);
    L.push('```');
    L.push('');
    L.push(`Bridge afterwards: tasks by state ${JSON.stringify(m.tasksByState)}; ledger verdicts ${JSON.stringify(m.ledger)}; webhooks received by the agent ${m.webhooks}, replies mailed ${m.replies}.`);
    if (m.mode === 'adapted') {
      const rpc = m.adapterHits.filter((h) => h.method === 'POST');
      L.push(`Adapter: ${m.adapterHits.length} requests (${rpc.length} POST), bearer added to ${m.injectedAuth}.`);
    }
    L.push('');
    if (!m.results) {
      L.push(`No JUnit XML was written; see the kit output (${m.outputFile}).`);
      continue;
    }
    L.push('| test | outcome | message |');
    L.push('| --- | --- | --- |');
    for (const r of m.results) L.push(`| \`${r.id}\` | ${r.outcome} | ${r.outcome === 'passed' ? '' : oneLine(r.message)} |`);
  }
  L.push('');
  L.push(`Raw outputs were kept outside the repo in ${o.artifacts} (kit output, JUnit XML and bridge log per mode).`);
  L.push('');
  return L.join('\n');
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  mkdirSync(o.artifacts, { recursive: true });
  const started = new Date();
  let interrupted = false;
  const onSignal = (sig: NodeJS.Signals): void => {
    interrupted = true;
    if (running) killGroup(running);
    process.stderr.write(`conformance-tck: ${sig}, stopping (no report written)\n`);
    setTimeout(() => process.exit(130), 10_000).unref();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const results: ModeResult[] = [];
  for (const mode of o.modes) {
    if (!interrupted) results.push(await runMode(o, mode));
  }
  if (interrupted) {
    process.exitCode = 130;
    return;
  }
  writeFileSync(o.out, report(o, results, started));

  process.stdout.write('\n');
  for (const m of results) {
    const c = m.results ? counts(m.results) : undefined;
    process.stdout.write(
      c
        ? `[${m.mode}] ${c.total} tests: ${c.passed} passed, ${c.failed} failed, ${c.error} errors, ${c.skipped} skipped\n`
        : `[${m.mode}] no results (kit exit ${m.timedOut ? 'timed out' : m.exitCode}); see ${m.outputFile}\n`,
    );
  }
  process.stdout.write(`report: ${o.out}\nartifacts: ${o.artifacts}\n`);
  process.exitCode = results.every((m) => m.results !== null) ? 0 : 1;
}

main().catch((err: unknown) => {
  if (running) killGroup(running);
  process.stderr.write(`conformance-tck: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
