/**
 * A store of a million finished tasks (issue 17): what the A2A reads, `serve` start and the CLI's
 * read commands cost at 1,000 tasks and at 1,000,000, and the file size per task.
 *
 * One store file grows from 1,000 to 1,000,000 COMPLETED tasks (a task a minute, the newest now),
 * each with its webhook attempt and a ledger row holding the genuine reply's raw bytes, written
 * through the bridge's own functions (bench/lib/store-fill.ts). At each size:
 * - `serve` start: spawn of `a2a-mailbridge serve` to its first `/health` 200 (3 starts, median);
 * - GetTask spread over 5,000 of the finished tasks: concurrency 1 (p50, the latency) and 64
 *   (req/s); ListTasks (pageSize 50) on the first page and on a deep page (the page after half of
 *   the tasks, reached by following `nextPageToken`), concurrency 1;
 * - each read command of the CLI as a person runs it (a new process each time; 3 runs, median;
 *   the bridge is running), beside `a2a-mailbridge --version` (Node's start and the CLI's
 *   parsing), and `backup` beside `cp` of the same file;
 * - the file size per task (store and WAL).
 *
 * Run: npx tsx bench/million.ts
 * Knobs: BENCH_TASKS (the large size, default 1000000), BENCH_DURATION_S (per load, default 3),
 *        BENCH_KEEP=<dir> keeps (or reuses) the store files in that folder (tasks-<size>.sqlite).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { getTaskBody, rpc, rpcHeaders, startBridgeFixture, type BridgeFixture } from './lib/bridge-fixture.js';
import { buildBridge } from './lib/build.js';
import { startChild } from './lib/child.js';
import type { LoadJob, LoadResult } from './lib/load.js';
import { describeLoad, startLoadMeter } from './lib/machine.js';
import { dkimFixture, genuineReply } from './lib/mail-fixture.js';
import { writeSection } from './lib/results.js';
import { bytes, median, ms, num, ratio, table, verdict } from './lib/stats.js';
import { fillBridge, fillFinishedTasks } from './lib/store-fill.js';
import type { V1ListTasksResult, V1Task } from '../src/a2a/wire.js';
import { MIGRATIONS } from '../src/store/migrations.js';
import { Store } from '../src/store/store.js';

const BIG = Number(process.env.BENCH_TASKS ?? 1_000_000);
const SIZES = [1_000, BIG];
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 3);
const MINUTE = 60_000;

interface Figures {
  tasks: number;
  fillMs: number;
  fileBytes: number;
  tables: { name: string; bytes: number }[];
  serveStart: number[];
  getTask1: LoadResult;
  getTask64: LoadResult;
  listFirst: LoadResult;
  listDeep: LoadResult;
  deepAfter: number;
  cli: Map<string, number[]>;
}

function fileBytes(path: string): number {
  return statSync(path).size + (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);
}

/** Bytes per table and index (SQLite's dbstat), the largest first. */
function tableBytes(path: string): { name: string; bytes: number }[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare(`SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC`).all() as { name: string; bytes: number }[];
  } finally {
    db.close();
  }
}

const main = await buildBridge();
const meter = startLoadMeter();
const keep = process.env.BENCH_KEEP;
const dir = keep ?? mkdtempSync(join(tmpdir(), 'mb-bench-million-'));
mkdirSync(dir, { recursive: true });
/** One store file per size: the large one starts as a copy of the small one and is filled on. */
const storeOf = (size: number): string => join(dir, `tasks-${size}.sqlite`);
const countOf = (path: string): number => {
  if (!existsSync(path)) return 0;
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM tasks').get() as { n: number }).n;
  } finally {
    db.close();
  }
};
const schemaVersion = (path: string): number => {
  const db = new Database(path, { readonly: true });
  try {
    return db.pragma('user_version', { simple: true }) as number;
  } finally {
    db.close();
  }
};
const load = await startChild('load.ts');
const results: Figures[] = [];
try {
  const template = await genuineReply(dkimFixture(), { taskId: '00000000-0000-4000-8000-000000000000', token: '0'.repeat(32) });
  const start = Date.now() - BIG * MINUTE;
  let previous: string | null = null;
  for (const size of SIZES) {
    const storePath = storeOf(size);
    let filled = countOf(storePath);
    if (filled === 0 && previous !== null) {
      // A closed store is one file (its WAL checkpointed at close): copy it and fill on.
      copyFileSync(previous, storePath);
      filled = countOf(storePath);
    }
    previous = storePath;
    let fillMs = 0;
    if (filled < size) {
      const fill = fillBridge(storePath);
      const t = performance.now();
      let last = performance.now();
      await fillFinishedTasks(fill.ctx, fill.clock, size - filled, template, {
        offset: filled,
        startAt: start + filled * MINUTE,
        progress: (done) => {
          if (performance.now() - last > 10_000) {
            last = performance.now();
            console.log(`  filled ${num(filled + done)} of ${num(size)} (${num(((performance.now() - t) * 1000) / done)} µs a task)`);
          }
        },
      });
      fillMs = performance.now() - t;
      await fill.close();
      console.log(`filled ${num(size)} tasks (${num(fillMs)} ms)`);
    }
    // A store kept by an earlier run may predate a migration: upgrade it here, as `serve` would at
    // its first start, so no start measured below pays for that once-only work.
    if (schemaVersion(storePath) < MIGRATIONS.length) {
      const t = performance.now();
      Store.open(storePath).close();
      console.log(`migrated the kept store of ${num(size)} tasks to schema version ${MIGRATIONS.length} (${num(performance.now() - t)} ms)`);
    }
    const idsDb = new Database(storePath, { readonly: true });
    const ids = idsDb.prepare(`SELECT id FROM tasks ORDER BY created_at`).pluck().all() as string[];
    idsDb.close();
    const f: Figures = { tasks: size, fillMs, fileBytes: fileBytes(storePath), tables: tableBytes(storePath), serveStart: [], getTask1: null!, getTask64: null!, listFirst: null!, listDeep: null!, deepAfter: 0, cli: new Map() };
    let bridge: BridgeFixture | null = null;
    try {
      for (let i = 0; i < 3; i++) {
        await bridge?.close();
        bridge = await startBridgeFixture({ storePath });
        f.serveStart.push(bridge.startMs);
      }
      const b = bridge!;
      const headers = rpcHeaders();
      const run = async (job: Omit<LoadJob, 'url' | 'headers'>): Promise<LoadResult> => {
        const { result } = await load.call<{ result: LoadResult }>({ type: 'run', job: { ...job, url: b.endpoint, headers } });
        if (result.non2xx || result.errors) throw new Error(`${result.non2xx} non-2xx answers, ${result.errors} errors`);
        return result;
      };
      const sample = Array.from({ length: 5000 }, (_, i) => ids[(i * 7919) % ids.length]!);
      const first = (await rpc<V1Task>(b.endpoint, getTaskBody(sample[0]!))).result;
      if (first.status.state !== 'TASK_STATE_COMPLETED' || first.artifacts?.length !== 1) throw new Error('a finished task did not read back as COMPLETED with its artifact');
      const getBodies = sample.map(getTaskBody);
      await run({ connections: 64, durationS: 2, bodies: getBodies });
      f.getTask1 = await run({ connections: 1, durationS: DURATION_S, bodies: getBodies });
      f.getTask64 = await run({ connections: 64, durationS: DURATION_S, bodies: getBodies });

      const list = (params: Record<string, unknown>): string => JSON.stringify({ jsonrpc: '2.0', id: 'l', method: 'ListTasks', params });
      await run({ connections: 1, durationS: 1, body: list({ pageSize: 50 }) });
      f.listFirst = await run({ connections: 1, durationS: DURATION_S, body: list({ pageSize: 50 }) });
      // The deep page: follow nextPageToken through half of the tasks.
      let token = '';
      const walked = performance.now();
      for (let seen = 0; seen < size / 2; ) {
        const page = (await rpc<V1ListTasksResult>(b.endpoint, list({ pageSize: 100, ...(token ? { pageToken: token } : {}) }))).result;
        seen += page.tasks.length;
        token = page.nextPageToken;
        if (!token) throw new Error(`ListTasks stopped after ${seen} tasks`);
        f.deepAfter = seen;
      }
      console.log(`walked to task ${num(f.deepAfter)} in ${num(performance.now() - walked)} ms`);
      await run({ connections: 1, durationS: 1, body: list({ pageSize: 50, pageToken: token }) });
      f.listDeep = await run({ connections: 1, durationS: DURATION_S, body: list({ pageSize: 50, pageToken: token }) });

      // The CLI's read commands, each a new process, as a person runs them.
      const cfg = b.configDir.configPath;
      const someId = sample[1]!;
      const backupFile = join(dir, 'backup.sqlite');
      const commands: [string, string[], (() => void)?][] = [
        ['--version (reference: Node start and the CLI)', ['--version']],
        ['config', ['config']],
        ['status', ['status']],
        ['tasks', ['tasks']],
        ['tasks --state completed --agent grok', ['tasks', '--state', 'completed', '--agent', 'grok']],
        ['show <id>', ['show', someId]],
        ['show <8-character prefix>', ['show', someId.slice(0, 8)]],
        ['ledger', ['ledger']],
        ['ledger --task <id>', ['ledger', '--task', someId]],
        ['prune --dry-run --older-than 30', ['prune', '--dry-run', '--older-than', '30']],
        ['prune --dry-run --older-than 1 (a day)', ['prune', '--dry-run', '--older-than', '1']],
        ['backup <file>', ['backup', backupFile], () => rmSync(backupFile, { force: true })],
      ];
      for (const [name, args, after] of commands) {
        const times: number[] = [];
        for (let i = 0; i < 3; i++) {
          const t = performance.now();
          const r = spawnSync(process.execPath, [main, '--config', cfg, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
          times.push(performance.now() - t);
          after?.();
          if (r.status !== 0) throw new Error(`${name}: exit ${r.status}: ${r.stderr}`);
        }
        f.cli.set(name, times);
        console.log(`${num(size)} tasks: ${name} ${ms(median(times))}`);
      }
      const cp: number[] = [];
      for (let i = 0; i < 3; i++) {
        const t = performance.now();
        spawnSync('cp', [storePath, backupFile]);
        cp.push(performance.now() - t);
        rmSync(backupFile, { force: true });
      }
      f.cli.set('cp <store file> (reference for backup)', cp);
    } finally {
      await bridge?.close();
    }
    results.push(f);
    console.log(`${num(size)} tasks: serve start ${ms(median(f.serveStart))}, GetTask p50 ${ms(f.getTask1.p50)}, c=64 ${num(f.getTask64.rps)} req/s, ListTasks first ${ms(f.listFirst.p50)}, deep ${ms(f.listDeep.p50)}, ${bytes(f.fileBytes / size)} a task`);
  }
} finally {
  await load.stop();
  if (!keep) rmSync(dir, { recursive: true, force: true });
}
const machineLoad = meter.stop();

const [small, big] = [results[0]!, results[1]!];
const row = (what: string, a: number, b: number, show: (v: number) => string = ms): string[] => [what, show(a), show(b), ratio(b, a)];
const cliNames = [...big.cli.keys()];
const slowestRead = Math.max(...cliNames.filter((n) => !n.includes('reference') && !n.startsWith('backup')).map((n) => median(big.cli.get(n)!)));
const getRatio = big.getTask1.p50 / small.getTask1.p50;
const firstRatio = big.listFirst.p50 / small.listFirst.p50;
const deepRatio = big.listDeep.p50 / small.listDeep.p50;
const perTask = big.fileBytes / big.tasks;
const body = [
  `One store file filled to ${num(small.tasks)} and then ${num(big.tasks)} COMPLETED tasks (a task a minute up to now; per task what \`submit\`, an accepted webhook attempt and an applied genuine \`done\` reply write, through the bridge's functions: bench/lib/store-fill.ts; ${big.fillMs > 0 ? `${num(big.fillMs)} ms (${num((big.fillMs * 1000) / (big.tasks - small.tasks))} µs a task) for the last ${num(big.tasks - small.tasks)}` : 'the store kept by an earlier run (BENCH_KEEP), so its fill is not timed here'}). The bridge: \`a2a-mailbridge serve\` (src/ built by scripts/build.ts, as \`npm run build\` does) on that file. GetTask spread over 5,000 of the tasks; ListTasks with pageSize 50, the deep page after ${num(big.deepAfter)} tasks (${num(small.deepAfter)} at ${num(small.tasks)}); ${DURATION_S} s of load each (autocannon in its own process). CLI: a new process per run, 3 runs, median, with the bridge running. ${describeLoad(machineLoad)}`,
  '',
  table(
    ['what', `${num(small.tasks)} tasks`, `${num(big.tasks)} tasks`, 'ratio'],
    [
      row('`serve` start to the first /health 200', median(small.serveStart), median(big.serveStart)),
      row('GetTask p50, concurrency 1', small.getTask1.p50, big.getTask1.p50),
      row('GetTask req/s, concurrency 64', small.getTask64.rps, big.getTask64.rps, num),
      row('GetTask p99, concurrency 64', small.getTask64.p99, big.getTask64.p99),
      row('ListTasks first page p50', small.listFirst.p50, big.listFirst.p50),
      row('ListTasks deep page p50', small.listDeep.p50, big.listDeep.p50),
      ...cliNames.map((n) => row(`\`${n}\``, median(small.cli.get(n)!), median(big.cli.get(n)!))),
      row('store file per task (with WAL)', small.fileBytes / small.tasks, perTask, bytes),
    ],
  ),
  '',
  `Where the bytes are at ${num(big.tasks)} tasks (dbstat, per task): ${big.tables.slice(0, 12).map((t) => `${t.name} ${bytes(Math.round(t.bytes / big.tasks))}`).join(', ')}.`,
  '',
  'Goals (issue 17):',
  `- Every read command and \`serve\` start < 300 ms at ${num(big.tasks)} tasks: slowest read command ${ms(slowestRead)}, \`serve\` start ${ms(median(big.serveStart))} — ${verdict(slowestRead < 300 && median(big.serveStart) < 300)}; \`backup\` ${ms(median(big.cli.get('backup <file>')!))} (copying the file alone: ${ms(median(big.cli.get('cp <store file> (reference for backup)')!))}).`,
  `- GetTask and ListTasks within 1.5× of their ${num(small.tasks)}-task figures: GetTask ${getRatio.toFixed(2)}×, ListTasks first page ${firstRatio.toFixed(2)}×, deep page ${deepRatio.toFixed(2)}× — ${verdict(Math.max(getRatio, firstRatio, deepRatio) <= 1.5)}.`,
  `- ≤ 6 KB per task: ${bytes(perTask)} (${num(perTask)} bytes) — ${verdict(perTask <= 6000)}.`,
];
writeSection('million', 'A million tasks: reads, start-up and the CLI by store size', body.join('\n'));
