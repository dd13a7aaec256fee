/**
 * Instructions per GetTask, the bridge beside a bare `node:http` server, counted by Valgrind's
 * callgrind: a figure that does not move with the machine's load, where req/s and CPU time on a
 * shared 2-core VM move by ±6% from round to round (bench/machine-limit.ts). It counts user-space
 * instructions of every thread of the server process (the kernel's work, cache misses and waits
 * are not in it), so it tells whether a change to the read path does less work, not how fast a
 * call is: use it beside machine-limit, not instead of it.
 *
 * Each server runs under `valgrind --tool=callgrind --instr-atstart=no` (the bridge with the
 * service templates' flags, as machine-limit starts it; the bare server on plain `node`), takes
 * BENCH_WARM calls uncounted (past V8's tier-up counts, so the code measured is the optimised
 * code a busy bridge runs), then BENCH_CALLS counted ones (`callgrind_control -i on`, the calls,
 * a dump). A major collection (mark-compact) that falls in the counted calls adds to them; its
 * share is printed beside the total.
 *
 * Run: npx tsx bench/instructions.ts (needs `valgrind` on PATH, else it says so and skips; about 4 minutes)
 * Knobs: BENCH_WARM (uncounted calls, default 60000), BENCH_CALLS (counted calls, default 10000),
 *        BENCH_OTHER=<cli/main.js of another build> counts that build too.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BARE_SERVER } from './lib/bare-server.js';
import { buildBridge } from './lib/build.js';
import { firstHealth, getTaskBody, rpcHeaders, serviceNodeFlags, startBridgeFixture, workingTask } from './lib/bridge-fixture.js';
import { describeLoad, startLoadMeter } from './lib/machine.js';
import { writeSection } from './lib/results.js';
import { bytes, num, ratio, table } from './lib/stats.js';
import { freePort } from '../test/helpers/free-port.js';

const WARM = Number(process.env.BENCH_WARM ?? 60_000);
const CALLS = Number(process.env.BENCH_CALLS ?? 10_000);
const OTHER = process.env.BENCH_OTHER;
/** Calls in flight: enough to keep the server busy under Valgrind's slowdown. */
const CONCURRENCY = 16;

try {
  execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
} catch {
  // Not a failure of `npm run bench` on a machine without it: said, and skipped.
  console.log('bench/instructions.ts: skipped, valgrind is not on PATH (Debian: apt-get install valgrind)');
  process.exit(0);
}

const dir = mkdtempSync(join(tmpdir(), 'mb-bench-instr-'));
/**
 * The program the fixture starts in place of `node` + CLI: runs the same command line under
 * callgrind, with counting off until asked, and says the counted process's pid in `<out>.pid`.
 */
const WRAPPER = join(dir, 'callgrind.cjs');
writeFileSync(
  WRAPPER,
  `const { spawn } = require('node:child_process');
const out = process.env.CALLGRIND_OUT;
const target = process.env.CALLGRIND_MAIN ? [process.env.CALLGRIND_MAIN] : [];
const c = spawn('valgrind', ['--tool=callgrind', '--instr-atstart=no', '--callgrind-out-file=' + out + '.%p', process.execPath, ...process.execArgv, ...target, ...process.argv.slice(2)], { stdio: ['ignore', 'ignore', 'inherit'] });
require('node:fs').writeFileSync(out + '.pid', String(c.pid));
for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => c.kill(s));
c.on('exit', (code) => process.exit(code ?? 0));
`,
);

/** `n` GetTask calls, CONCURRENCY at a time on kept-alive connections; every answer must be 200. */
async function calls(url: string, body: string, n: number): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const u = new URL(url);
  const headers = { ...rpcHeaders(), 'content-length': String(Buffer.byteLength(body)) };
  let left = n;
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const r = request({ agent, host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`${url}: HTTP ${res.statusCode}`))));
      });
      r.on('error', reject);
      r.end(body);
    });
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (left-- > 0) await one();
  }));
  agent.destroy();
}

interface Counted {
  perCall: number;
  /** Of `perCall`: instructions in V8's major collection (marking, sweeping, compaction). */
  majorGc: number;
}

/** Warms `url` up uncounted, counts CALLS calls, and reads the dump of the process `out` names. */
async function count(out: string, url: string, body: string): Promise<Counted> {
  await calls(url, body, WARM);
  const pid = readFileSync(`${out}.pid`, 'utf8');
  execFileSync('callgrind_control', ['-i', 'on', pid], { stdio: 'ignore' });
  await calls(url, body, CALLS);
  execFileSync('callgrind_control', ['-d', pid], { stdio: 'ignore' });
  execFileSync('callgrind_control', ['-i', 'off', pid], { stdio: 'ignore' });
  const dump = `${out}.${pid}.1`;
  const total = Number(/^summary: (\d+)/m.exec(readFileSync(dump, 'utf8'))![1]);
  const annotated = execFileSync('callgrind_annotate', ['--inclusive=no', '--threshold=100', dump], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  let major = 0;
  for (const line of annotated.split('\n')) {
    const m = /^\s*([\d,]+) .*(MarkCompact|ConcurrentMarking|MarkingVisitor|Sweeper|MarkingBarrier)/.exec(line);
    if (m) major += Number(m[1]!.replaceAll(',', ''));
  }
  return { perCall: total / CALLS, majorGc: major / CALLS };
}

const meter = startLoadMeter();
const rows: { name: string; c: Counted }[] = [];
let answerBytes = 0;
try {
  const builds: [string, string][] = [['bridge', await buildBridge()], ...(OTHER ? [['other build', OTHER] as [string, string]] : [])];
  let answer = '';
  let body = '';
  for (const [name, main] of builds) {
    const out = join(dir, `callgrind-${rows.length}`);
    process.env.CALLGRIND_OUT = out;
    process.env.CALLGRIND_MAIN = main;
    const f = await startBridgeFixture({ storePath: join(dir, `${rows.length}.sqlite`), main: WRAPPER });
    try {
      const task = await workingTask(f);
      body = getTaskBody(task.taskId);
      answer = await fetch(f.endpoint, { method: 'POST', headers: rpcHeaders(), body }).then((r) => r.text());
      answerBytes = Buffer.byteLength(answer);
      rows.push({ name, c: await count(out, f.endpoint, body) });
      console.log(`${name}: ${num(rows.at(-1)!.c.perCall)} instructions per GetTask`);
    } finally {
      await f.close();
    }
  }
  const out = join(dir, 'callgrind-bare');
  process.env.CALLGRIND_OUT = out;
  delete process.env.CALLGRIND_MAIN;
  const port = await freePort();
  const bare = spawn(process.execPath, [WRAPPER, '-e', BARE_SERVER], { env: { ...process.env, BARE_BODY: answer, BARE_PORT: String(port) }, stdio: 'ignore' });
  try {
    await firstHealth(port, 120_000, () => bare.exitCode !== null);
    rows.push({ name: 'bare node:http', c: await count(out, `http://127.0.0.1:${port}/agents/grok`, body) });
    console.log(`bare node:http: ${num(rows.at(-1)!.c.perCall)} instructions per GetTask`);
  } finally {
    bare.kill('SIGTERM');
    await new Promise((resolve) => bare.once('exit', resolve));
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const load = meter.stop();
const bare = rows.at(-1)!.c;
writeSection(
  'instructions',
  'Instructions per GetTask beside bare node:http (callgrind)',
  [
    `User-space instructions per GetTask of one WORKING task (answer ${bytes(answerBytes)}, the same bytes from both servers), all threads of the server process, counted by Valgrind's callgrind over ${num(CALLS)} calls (${CONCURRENCY} in flight on kept-alive connections) after ${num(WARM)} uncounted ones. The bridge: \`a2a-mailbridge serve\` with the service templates' flags (\`${serviceNodeFlags().join(' ')}\`); the reference: the bare \`node:http\` server of machine-limit on plain \`node\`. The load of the machine does not change these counts (it changes how many timer-driven reads fall in the counted calls: under Valgrind a call takes about a millisecond, so the store's \`PRAGMA data_version\`, read at most once a millisecond, is read on most calls; a loaded server at 28,000 calls a second reads it on one in 28). ${describeLoad(load, { timed: false })}`,
    '',
    table(
      ['server', 'instructions per GetTask', 'of which major collection', 'ratio to bare'],
      rows.map((r) => [r.name, num(r.c.perCall), num(r.c.majorGc), ratio(r.c.perCall, bare.perCall)]),
    ),
  ].join('\n'),
);
process.exit(0);
