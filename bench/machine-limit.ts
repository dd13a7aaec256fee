/**
 * How close the bridge comes to what this machine can do (issue 17): beside each figure of the
 * bridge, the same figure of a bare `node:http` server measured in the same run.
 *
 * - GetTask at concurrency 1 and 64 against a bare server that reads the request body and sends
 *   the bridge's own GetTask answer (same bytes, same headers), rounds alternating A, B, A, B…,
 *   with each server's CPU time per call (/proc/<pid>/stat, user + system, all threads) and, at
 *   concurrency 64, p99 ÷ the mean latency (the tail's shape; the mean of a closed loop of c
 *   connections is c ÷ req/s);
 * - resident memory right after start (2 s after the first `/health` 200) and its peak under the
 *   GetTask load;
 * - cold start: from the spawn of the process to its first `/health` 200 (polled every 2 ms), on
 *   an existing store.
 *
 * The bridge is `a2a-mailbridge serve` (src/ built by scripts/build.ts, as `npm run build` does) with the flags of the
 * service templates; the bare server runs on plain `node` with no flag. The load generator is
 * autocannon in a process of its own (bench/lib/load.ts).
 *
 * Run: npx tsx bench/machine-limit.ts
 * Knobs: BENCH_ROUNDS (default 3), BENCH_DURATION_S (per round and server, default 5),
 *        BENCH_STARTS (cold starts per server, default 7),
 *        BENCH_PROFILE=1 adds one profiled round of GetTask at concurrency 64 (node --cpu-prof) and
 *        prints where the bridge's CPU time goes,
 *        BENCH_ONLY=start measures only the memory after start and the cold start (no GetTask rounds),
 *        BENCH_OTHER=<cli/main.js of another build> (e.g. of main: `npm run build` in its checkout)
 *        starts that build too in the cold-start loop, alternating with this one and bare node.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstHealth, getTaskBody, rpcHeaders, serviceNodeFlags, startBridgeFixture, workingTask, type BridgeFixture } from './lib/bridge-fixture.js';
import { cpuMsOf, rssOf, startChild } from './lib/child.js';
import type { LoadJob, LoadResult } from './lib/load.js';
import { describeLoad, startLoadMeter } from './lib/machine.js';
import { newestProfile, summariseProfile } from './lib/profile.js';
import { BARE_SERVER } from './lib/bare-server.js';
import { writeSection } from './lib/results.js';
import { bytes, median, ms, num, ratio, table, verdict } from './lib/stats.js';
import { freePort } from '../test/helpers/free-port.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);
const STARTS = Number(process.env.BENCH_STARTS ?? 7);
const PROFILE = process.env.BENCH_PROFILE === '1';
const ONLY_START = process.env.BENCH_ONLY === 'start';
const OTHER = process.env.BENCH_OTHER;
const MiB = 1024 * 1024;

interface Started {
  proc: ChildProcess;
  pid: number;
  url: string;
  startMs: number;
  /** CPU time used by the first `/health` 200, in ms (all threads). */
  startCpuMs: number;
  close(): Promise<void>;
}

async function startBare(body: string): Promise<Started> {
  const port = await freePort();
  const spawnedAt = performance.now();
  const proc = spawn(process.execPath, ['-e', BARE_SERVER], { env: { ...process.env, BARE_BODY: body, BARE_PORT: String(port) }, stdio: 'ignore' });
  await firstHealth(port, 30_000, () => proc.exitCode !== null);
  const startMs = performance.now() - spawnedAt;
  const startCpuMs = cpuMsOf(proc.pid!);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return {
    proc,
    pid: proc.pid!,
    url: `http://127.0.0.1:${port}/agents/grok`,
    startMs,
    startCpuMs,
    async close() {
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

function asStarted(f: BridgeFixture): Started {
  return { proc: f.proc, pid: f.pid, url: f.endpoint, startMs: f.startMs, startCpuMs: f.startCpuMs, close: () => f.close() };
}

const sleep = (msec: number): Promise<void> => new Promise((r) => setTimeout(r, msec));

const meter = startLoadMeter();
const storeDir = mkdtempSync(join(tmpdir(), 'mb-bench-limit-'));
const storePath = join(storeDir, 'bridge.sqlite');
const profileDir = join(storeDir, 'profiles');
const load = await startChild('load.ts');
const body: string[] = [];
try {
  const headers = rpcHeaders();
  const run = async (job: LoadJob): Promise<LoadResult> => {
    const { result } = await load.call<{ result: LoadResult }>({ type: 'run', job });
    if (result.non2xx || result.errors) throw new Error(`${job.url}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
    return result;
  };

  // Throughput: one bridge with a WORKING task, and the bare server sending that task's answer.
  const bridge = await startBridgeFixture({ storePath });
  const task = await workingTask(bridge);
  const getBody = getTaskBody(task.taskId);
  const answer = await fetch(bridge.endpoint, { method: 'POST', headers, body: getBody }).then((r) => r.text());
  const bare = await startBare(answer);
  const bareAnswer = await fetch(bare.url, { method: 'POST', headers, body: getBody }).then((r) => r.text());
  if (bareAnswer !== answer) throw new Error('the bare server does not send the bridge answer');
  // cpuUs: the server process's CPU time (user + system, all threads) per answered call, in µs.
  type Row = { c: number; bridge: LoadResult[]; bare: LoadResult[]; cpuUs: { bridge: number[]; bare: number[] }; peakRss: number; barePeakRss: number };
  const rows: Row[] = [];
  const idleRss = rssOf(bridge.pid).rss;
  const bareIdleRss = rssOf(bare.pid).rss;
  try {
    for (const c of ONLY_START ? [] : [1, 64]) {
      const row: Row = { c, bridge: [], bare: [], cpuUs: { bridge: [], bare: [] }, peakRss: 0, barePeakRss: 0 };
      const job = (url: string, durationS = DURATION_S): LoadJob => ({ url, connections: c, durationS, headers, body: getBody });
      await run(job(bridge.endpoint, 2));
      await run(job(bare.url, 2));
      for (let r = 1; r <= ROUNDS; r++) {
        const peak = (pid: number, which: 'bridge' | 'bare', f: () => Promise<LoadResult>): Promise<[LoadResult, number]> => {
          let top = 0;
          const cpu0 = cpuMsOf(pid);
          const t = setInterval(() => (top = Math.max(top, rssOf(pid).rss)), 100);
          return f()
            .then((x) => {
              row.cpuUs[which].push(((cpuMsOf(pid) - cpu0) * 1000) / x.requests);
              return [x, Math.max(top, rssOf(pid).rss)] as [LoadResult, number];
            })
            .finally(() => clearInterval(t));
        };
        const [b, bp] = await peak(bridge.pid, 'bridge', () => run(job(bridge.endpoint)));
        const [n, np] = await peak(bare.pid, 'bare', () => run(job(bare.url)));
        row.bridge.push(b);
        row.bare.push(n);
        row.peakRss = Math.max(row.peakRss, bp);
        row.barePeakRss = Math.max(row.barePeakRss, np);
        console.log(`GetTask c=${c} round ${r}: bridge ${num(b.rps)} req/s (p99 ${ms(b.p99)}), bare node:http ${num(n.rps)} req/s (p99 ${ms(n.p99)})`);
      }
      rows.push(row);
    }
  } finally {
    await bare.close();
    await bridge.close();
  }

  // Cold start and memory after start, alternately, on the store the bridge just used.
  const starts: { bridge: number[]; bare: number[]; other: number[]; rss: number[]; bareRss: number[]; otherRss: number[] } = { bridge: [], bare: [], other: [], rss: [], bareRss: [], otherRss: [] };
  // CPU time by the first /health 200: a figure of the start that other work on the machine does not stretch.
  const startCpu: Record<'bridge' | 'bare' | 'other', number[]> = { bridge: [], bare: [], other: [] };
  // The same RSS split into the process's own pages and the pages of mapped files (bench/lib/child.ts).
  const split: Record<'bridge' | 'bare' | 'other', { anon: number[]; file: number[] }> = { bridge: { anon: [], file: [] }, bare: { anon: [], file: [] }, other: { anon: [], file: [] } };
  for (let i = 0; i < STARTS; i++) {
    for (const which of OTHER ? (['bridge', 'other', 'bare'] as const) : (['bridge', 'bare'] as const)) {
      const s = which === 'bare' ? await startBare(answer) : asStarted(await startBridgeFixture({ storePath, ...(which === 'other' ? { main: OTHER } : {}) }));
      try {
        await sleep(2000);
        starts[which].push(s.startMs);
        startCpu[which].push(s.startCpuMs);
        const m = rssOf(s.pid);
        starts[which === 'bridge' ? 'rss' : which === 'bare' ? 'bareRss' : 'otherRss'].push(m.rss);
        split[which].anon.push(m.anon);
        split[which].file.push(m.file);
      } finally {
        await s.close();
      }
    }
    const other = OTHER ? `, other build ${ms(starts.other.at(-1)!)} (${bytes(starts.otherRss.at(-1)!)})` : '';
    console.log(`start ${i + 1}: bridge ${ms(starts.bridge.at(-1)!)} (${bytes(starts.rss.at(-1)!)})${other}, bare node:http ${ms(starts.bare.at(-1)!)} (${bytes(starts.bareRss.at(-1)!)})`);
  }
  const cpuNote = (w: 'bridge' | 'bare' | 'other'): string => `, CPU to the first /health ${ms(median(startCpu[w]))}`;
  console.log(
    `medians: bridge ${ms(median(starts.bridge))} (${bytes(median(starts.rss))}${cpuNote('bridge')})${OTHER ? `, other build ${ms(median(starts.other))} (${bytes(median(starts.otherRss))}${cpuNote('other')})` : ''}, bare node:http ${ms(median(starts.bare))} (${bytes(median(starts.bareRss))}${cpuNote('bare')})`,
  );

  let profileNote = '';
  if (PROFILE) {
    mkdirSync(profileDir, { recursive: true });
    const f = await startBridgeFixture({ storePath, execArgv: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] });
    let r: LoadResult;
    try {
      const t = await workingTask(f);
      const job: LoadJob = { url: f.endpoint, connections: 64, durationS: DURATION_S, headers, body: getTaskBody(t.taskId) };
      await run({ ...job, durationS: 2 });
      r = await run(job);
    } finally {
      await f.close();
    }
    const p = summariseProfile(newestProfile(profileDir), 15, {
      'SQLite statements (store/)': /^\S+ dist\/store\//,
      'the task view and its status text': /^(viewTask|statusText) /,
      'refresh: due dispatches, deadline sweep, mailbox due': /^(refresh|sweep|checkDue) dist\/core\/bridge/,
      'socket writes (writev)': /^writev /,
      'HTTP parsing and the server callback': /^(parserOnHeadersComplete|parserOnIncoming) /,
      'module loading at start': /^(compileSourceTextModule|wrapSafe|require) /,
      'garbage collection': /^\(garbage collector\)/,
    });
    profileNote = [
      '',
      `CPU profile of the bridge (node --cpu-prof) during one more ${DURATION_S} s round of GetTask at concurrency 64 (${num(r.rps)} req/s while profiled), as shares of its busy time (${num(p.busyMs)} ms):`,
      '',
      table(['where (inclusive)', 'share'], p.groups.map((g) => [g.what, `${(g.share * 100).toFixed(1)}%`])),
      '',
      table(['function (self time)', 'share'], p.self.map((l) => [`\`${l.what}\``, `${(l.share * 100).toFixed(1)}%`])),
    ].join('\n');
  }
  const machineLoad = meter.stop();

  const med = (xs: LoadResult[], k: 'rps' | 'p50' | 'p99'): number => median(xs.map((x) => x[k]));
  // The tail's shape: in a closed loop of c connections the mean latency is c ÷ req/s (Little's law), so p99 ÷ that mean says how
  // much of p99 is the tail's shape and how much is throughput; the median over the rounds.
  const tail = (xs: LoadResult[], c: number): number => median(xs.map((x) => x.p99 / ((c / x.rps) * 1000)));
  if (ONLY_START) {
    // Printed only: RESULTS.md keeps the whole section of a full run.
    const r = median(starts.rss);
    console.log(`${describeLoad(machineLoad)}\n- RSS after \`serve\` starts ≤ 60 MiB: ${(r / MiB).toFixed(1)} MiB (bare node:http ${(median(starts.bareRss) / MiB).toFixed(1)} MiB) — ${verdict(r <= 60 * MiB)}.`);
    console.log(`  anonymous ${bytes(median(split.bridge.anon))} (bare ${bytes(median(split.bare.anon))}), file-backed ${bytes(median(split.bridge.file))} (bare ${bytes(median(split.bare.file))})`);
    console.log(`- Cold start to the first /health 200 ≤ 2.5× bare node: ${ms(median(starts.bridge))} / ${ms(median(starts.bare))} = ${(median(starts.bridge) / median(starts.bare)).toFixed(2)}× — ${verdict(median(starts.bridge) / median(starts.bare) <= 2.5)}.`);
  }
  const at64 = rows.find((r) => r.c === 64);
  if (at64) {
    const tput = med(at64.bridge, 'rps') / med(at64.bare, 'rps');
    const p99 = med(at64.bridge, 'p99');
    const rss = median(starts.rss);
    const coldRatio = median(starts.bridge) / median(starts.bare);
    body.push(
      `The bridge: \`a2a-mailbridge serve\` (src/ built by scripts/build.ts as \`npm run build\` does, Node flags and environment of the service templates: \`${serviceNodeFlags().join(' ')}\`, \`NODE_COMPILE_CACHE\` in the folder of the store, so every start but the first of a run finds V8's code cache as a restarted service does) on a SQLite store, a Maildir mailbox with no check due (\`check_interval_s = 3600\`), logging at info; bearer and Host checked on every call; GetTask on one WORKING task (answer ${bytes(Buffer.byteLength(answer))}). The reference: a bare \`node:http\` server (CommonJS, its cheapest form) on plain \`node\` that reads the request body and sends the same answer bytes with the same headers. Load: autocannon in a process of its own, ${ROUNDS} rounds of ${DURATION_S} s per server and concurrency after 2 s of warm-up each, the two servers alternately; figures are the medians of the rounds. Memory: VmRSS 2 s after the first \`/health\` 200, and its peak (sampled every 100 ms) under the load. Cold start: spawn to the first \`/health\` 200 (polled every 2 ms) on an existing store, ${STARTS} starts of each, alternately, median. ${describeLoad(machineLoad)}`,
      '',
      table(
        ['what', 'bridge', 'bare node:http (reference)', 'ratio bridge/reference'],
        [
          ...rows.flatMap((r) => [
            [`GetTask req/s, concurrency ${r.c}`, num(med(r.bridge, 'rps')), num(med(r.bare, 'rps')), `${ratio(med(r.bridge, 'rps'), med(r.bare, 'rps'))} (rounds: ${r.bridge.map((b, i) => ratio(b.rps, r.bare[i]!.rps)).join(', ')})`],
            [`GetTask p50 / p99, concurrency ${r.c}`, `${ms(med(r.bridge, 'p50'))} / ${ms(med(r.bridge, 'p99'))}`, `${ms(med(r.bare, 'p50'))} / ${ms(med(r.bare, 'p99'))}`, `${ratio(med(r.bridge, 'p99'), med(r.bare, 'p99'))} (p99)`],
            [`CPU per GetTask (user + system, all threads), concurrency ${r.c}`, `${num(median(r.cpuUs.bridge), 1)} µs`, `${num(median(r.cpuUs.bare), 1)} µs`, ratio(median(r.cpuUs.bridge), median(r.cpuUs.bare))],
            ...(r.c > 1 ? [[`GetTask p99 ÷ mean latency (mean = concurrency ÷ req/s), concurrency ${r.c}`, tail(r.bridge, r.c).toFixed(2), tail(r.bare, r.c).toFixed(2), ratio(tail(r.bridge, r.c), tail(r.bare, r.c))]] : []),
          ]),
          ['RSS after start', bytes(rss), bytes(median(starts.bareRss)), ratio(rss, median(starts.bareRss))],
          ['… of it anonymous (RssAnon: V8 heap, malloc)', bytes(median(split.bridge.anon)), bytes(median(split.bare.anon)), ratio(median(split.bridge.anon), median(split.bare.anon))],
          ['… of it file-backed (RssFile: node binary, SQLite addon, libc; shared)', bytes(median(split.bridge.file)), bytes(median(split.bare.file)), ratio(median(split.bridge.file), median(split.bare.file))],
          ['RSS peak under GetTask load (c=64)', bytes(at64.peakRss), bytes(at64.barePeakRss), ratio(at64.peakRss, at64.barePeakRss)],
          ['RSS idle after the first calls (before the load)', bytes(idleRss), bytes(bareIdleRss), ratio(idleRss, bareIdleRss)],
          ['cold start to the first /health 200', `${ms(median(starts.bridge))} (${starts.bridge.map((x) => num(x)).join(', ')})`, `${ms(median(starts.bare))} (${starts.bare.map((x) => num(x)).join(', ')})`, ratio(median(starts.bridge), median(starts.bare))],
          ['CPU time by the first /health 200 (all threads)', ms(median(startCpu.bridge)), ms(median(startCpu.bare)), ratio(median(startCpu.bridge), median(startCpu.bare))],
        ],
      ),
      profileNote,
      '',
      'Goals (issue 17):',
      `- GetTask at concurrency 64 ≥ 0.40× the bare node:http server: ${ratio(med(at64.bridge, 'rps'), med(at64.bare, 'rps'))} — ${verdict(tput >= 0.4)}; p99 < 5 ms: ${ms(p99)} — ${verdict(p99 < 5)}. With its tail's shape in this run (p99 ${tail(at64.bridge, 64).toFixed(2)}× the mean latency), the bridge's p99 is under 5 ms from about ${num((tail(at64.bridge, 64) * 64 * 1000) / 5)} req/s at concurrency 64; the bare server reached ${num(med(at64.bare, 'rps'))} req/s, with p99 ${ms(med(at64.bare, 'p99'))}.`,
      `- RSS after \`serve\` starts ≤ 60 MiB: ${(rss / MiB).toFixed(1)} MiB — ${verdict(rss <= 60 * MiB)}.`,
      `- Cold start to the first /health 200 ≤ 2.5× bare node: ${coldRatio.toFixed(2)}× — ${verdict(coldRatio <= 2.5)}.`,
    );
    writeSection('machine-limit', "The machine's limit: GetTask, memory and start-up beside bare node:http", body.join('\n'));
  }
} finally {
  await load.stop();
  rmSync(storeDir, { recursive: true, force: true });
}
