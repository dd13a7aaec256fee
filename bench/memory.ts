/**
 * Resident memory of a bridge process whose store holds 100,000 finished tasks and 100,000 ledger
 * rows (raw bytes kept, as for every tagged reply), idle and while serving the GetTask load of
 * bench/a2a-overhead.ts (64 connections) — on one task, and spread over the finished tasks. A
 * bridge on an empty store is measured the same way for comparison.
 *
 * The store is filled before the bridge starts, in one transaction through the store's own
 * functions (bench/lib/store-fill.ts). RSS is read from /proc/<pid>/status (VmRSS every 100 ms
 * under load; VmHWM is the kernel's peak).
 *
 * Run: npx tsx bench/memory.ts      Knobs: BENCH_TASKS (default 100000), BENCH_DURATION_S (default 10)
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getTaskBody, rpc, rpcHeaders, startBridgeFixture, workingTask } from './lib/bridge-fixture.js';
import { buildBridge } from './lib/build.js';
import { rssOf, startChild } from './lib/child.js';
import type { LoadJob, LoadResult } from './lib/load.js';
import { describeLoad, startLoadMeter } from './lib/machine.js';
import { dkimFixture, genuineReply } from './lib/mail-fixture.js';
import { writeSection } from './lib/results.js';
import { bytes, num, table, verdict } from './lib/stats.js';
import { fillBridge, fillFinishedTasks } from './lib/store-fill.js';
import type { V1Task } from '../src/a2a/wire.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 100_000);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const MiB = 1024 * 1024;

interface Phase {
  peakRss: number;
  r: LoadResult;
}
interface Row {
  store: string;
  fileBytes: number;
  idleRss: number;
  one: Phase;
  spread: Phase | null;
  hwm: number;
}

await buildBridge();
const meter = startLoadMeter();
const dir = mkdtempSync(join(tmpdir(), 'mb-bench-memory-'));
const load = await startChild('load.ts');
const rows: Row[] = [];
let fillMs: number;
try {
  const dkim = dkimFixture();
  const template = await genuineReply(dkim, { taskId: '00000000-0000-4000-8000-000000000000', token: '0'.repeat(32) });
  const fullPath = join(dir, 'full.sqlite');
  const filled = performance.now();
  const fill = fillBridge(fullPath);
  const ids = await fillFinishedTasks(fill.ctx, fill.clock, TASKS, template);
  await fill.close();
  fillMs = performance.now() - filled;
  console.log(`filled ${num(TASKS)} finished tasks in ${num(fillMs)} ms`);

  for (const [label, storePath, finished] of [
    ['empty', join(dir, 'empty.sqlite'), [] as string[]],
    [`${num(TASKS)} finished tasks, ${num(TASKS)} ledger rows`, fullPath, ids],
  ] as const) {
    const f = await startBridgeFixture({ storePath });
    try {
      const pid = f.pid;
      const t = await workingTask(f);
      await new Promise((r) => setTimeout(r, 2000));
      const idleRss = rssOf(pid).rss;
      const under = async (job: LoadJob): Promise<Phase> => {
        let peakRss = 0;
        const timer = setInterval(() => (peakRss = Math.max(peakRss, rssOf(pid).rss)), 100);
        try {
          const { result } = await load.call<{ result: LoadResult }>({ type: 'run', job });
          if (result.non2xx || result.errors) throw new Error(`${result.non2xx} non-2xx answers, ${result.errors} errors`);
          return { peakRss: Math.max(peakRss, rssOf(pid).rss), r: result };
        } finally {
          clearInterval(timer);
        }
      };
      const base = { url: f.endpoint, connections: 64, durationS: DURATION_S, headers: rpcHeaders() };
      const one = await under({ ...base, body: getTaskBody(t.taskId) });
      let spread: Phase | null = null;
      if (finished.length) {
        // Every GetTask for another finished task, all over the store.
        const sample = Array.from({ length: 5000 }, (_, i) => finished[(i * 7919) % finished.length]!);
        const check = (await rpc<V1Task>(f.endpoint, getTaskBody(sample[0]!))).result;
        if (check.status.state !== 'TASK_STATE_COMPLETED' || check.artifacts!.length !== 1) throw new Error('a finished task did not read back as COMPLETED with its artifact');
        spread = await under({ ...base, bodies: sample.map(getTaskBody) });
      }
      const wal = `${storePath}-wal`;
      rows.push({ store: label, fileBytes: statSync(storePath).size + (existsSync(wal) ? statSync(wal).size : 0), idleRss, one, spread, hwm: rssOf(pid).peak });
      console.log(`${label}: idle ${bytes(idleRss)}, peak under load ${bytes(Math.max(one.peakRss, spread?.peakRss ?? 0))}`);
    } finally {
      await f.close();
    }
  }
} finally {
  await load.stop();
  rmSync(dir, { recursive: true, force: true });
}
const machineLoad = meter.stop();

const full = rows.at(-1)!;
const worst = Math.max(full.hwm, full.one.peakRss, full.spread?.peakRss ?? 0);
const body = [
  `RSS of the bridge process (\`a2a-mailbridge serve\`, src/ built by scripts/build.ts, as in bench/a2a-overhead.ts), from /proc/<pid>/status. The full store was written before the bridge started, through the bridge's own functions (bench/lib/store-fill.ts, ${num(fillMs)} ms): per task what \`submit\`, an accepted webhook attempt and an applied \`done\` reply write, the ledger row with the reply's raw bytes (≈${bytes(2900)}) included. Load: autocannon, 64 connections, ${DURATION_S} s, GetTask on one WORKING task (the load of bench/a2a-overhead.ts), then GetTask spread over 5,000 of the finished tasks. ${describeLoad(machineLoad)}`,
  '',
  table(
    ['store', 'file (with WAL)', 'RSS idle after start', 'RSS peak, GetTask one task (req/s)', 'RSS peak, GetTask spread over finished tasks (req/s)', 'VmHWM (kernel peak)'],
    rows.map((r) => [
      r.store,
      bytes(r.fileBytes),
      bytes(r.idleRss),
      `${bytes(r.one.peakRss)} (${num(r.one.r.rps)})`,
      r.spread ? `${bytes(r.spread.peakRss)} (${num(r.spread.r.rps)})` : '—',
      bytes(r.hwm),
    ]),
  ),
  '',
  'Goal:',
  `- RSS < 150 MB with ${num(TASKS)} finished tasks and ${num(TASKS)} ledger rows under the GetTask load: peak ${(worst / MiB).toFixed(1)} MiB — ${verdict(worst < 150 * 1e6)}.`,
];
writeSection('memory', 'Memory: RSS with a full store under GetTask load', body.join('\n'));
