/**
 * What one A2A call costs — GetTask, and a context poll (SendMessage on the context of a WORKING
 * task, no mailbox check due) — at 1, 16 and 64 concurrent connections, against the peer a
 * developer would pick instead: an `@a2a-js/sdk` server (DefaultRequestHandler + express
 * jsonRpcHandler + InMemoryTaskStore) answering GetTask for an equivalent task.
 *
 * Three processes: the bridge, the SDK peer and the load generator (autocannon) each run in a
 * child process of their own, on loopback. Bridge and peer are measured alternately in the same
 * run (A, B, A, B… rounds per concurrency), and the table gives the median of the rounds.
 *
 * Run: npx tsx bench/a2a-overhead.ts
 * Knobs: BENCH_ROUNDS (default 3), BENCH_DURATION_S (per round and server, default 5),
 *        BENCH_PROFILE=1 writes a V8 CPU profile of the bridge (--cpu-prof) to $TMPDIR/a2a-mailbridge-bench-profiles.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store } from '../src/store/store.js';
import { getTaskBody, hex, rpc, rpcHeaders, sendBody, startBridgeFixture, workingTask } from './lib/bridge-fixture.js';
import { startChild } from './lib/child.js';
import type { LoadJob, LoadResult } from './lib/load.js';
import { describeLoad, startLoadMeter } from './lib/machine.js';
import { writeSection } from './lib/results.js';
import { median, ms, num, ratio, table, verdict } from './lib/stats.js';
import type { SendMessageResponse, Task } from '@a2a-js/sdk';
import type { ProtoJson } from '../src/a2a/proto-json.js';
import type { V1Task } from '../src/a2a/wire.js';
import type { V1SendResult } from '../test/helpers/rpc-json.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);
const CONCURRENCY = [1, 16, 64];

const profileDir = join(tmpdir(), 'a2a-mailbridge-bench-profiles');
const execArgv = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
if (execArgv.length) {
  mkdirSync(profileDir, { recursive: true });
  console.log(`CPU profiles of the bridge go to ${profileDir}`);
}

const meter = startLoadMeter();
const bridge = await startBridgeFixture({ execArgv });
const peer = await startChild('sdk-peer.ts');
const load = await startChild('load.ts');
try {
  const headers = rpcHeaders();
  const ours = await workingTask(bridge);
  const view = (await rpc<V1Task>(bridge.endpoint, getTaskBody(ours.taskId))).result;
  const statusText = view.status.message!.parts[0]!.text!;
  const ask = view.history[0]!.parts[0]!.text!;
  // The equivalent task on the peer: same ask, same context, same status text.
  const peerTask = (await rpc<ProtoJson<SendMessageResponse>>(peer.ready.endpoint as string, sendBody(ask, ours.contextId, hex(16), { statusText }), headers)).result.task!;

  const bridgeGet: LoadJob = { url: bridge.endpoint, connections: 1, durationS: DURATION_S, headers, body: getTaskBody(ours.taskId) };
  const peerGet: LoadJob = { url: peer.ready.endpoint as string, connections: 1, durationS: DURATION_S, headers, body: getTaskBody(peerTask.id!) };
  const bridgeBytes = (await rpc(bridge.endpoint, bridgeGet.body!)).bytes;
  const peerBytes = (await rpc(peerGet.url, peerGet.body!)).bytes;

  const run = async (job: LoadJob, connections: number, durationS = DURATION_S): Promise<LoadResult> => {
    const { result } = await load.call<{ result: LoadResult }>({ type: 'run', job: { ...job, connections, durationS } });
    if (result.non2xx || result.errors) throw new Error(`${job.url}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
    return result;
  };
  const check = async (): Promise<void> => {
    // JSON-RPC errors travel with HTTP 200: look at the answers between rounds.
    const a = (await rpc<V1Task>(bridge.endpoint, bridgeGet.body!)).result;
    const b = (await rpc<ProtoJson<Task>>(peerGet.url, peerGet.body!)).result;
    if (a.status.state !== 'TASK_STATE_WORKING' || b.status!.state !== 'TASK_STATE_WORKING') throw new Error('a task left WORKING during the run');
  };

  type Row = { c: number; bridge: LoadResult[]; peer: LoadResult[]; poll: LoadResult[]; polls: number };
  const rows: Row[] = [];
  for (const c of CONCURRENCY) {
    const row: Row = { c, bridge: [], peer: [], poll: [], polls: 0 };
    // Warm both (JIT, connection set-up) before the measured rounds.
    await run(bridgeGet, c, 2);
    await run(peerGet, c, 2);
    for (let r = 1; r <= ROUNDS; r++) {
      await check();
      row.bridge.push(await run(bridgeGet, c));
      row.peer.push(await run(peerGet, c));
      process.stdout.write(`GetTask c=${c} round ${r}: bridge ${num(row.bridge.at(-1)!.rps)} req/s, peer ${num(row.peer.at(-1)!.rps)} req/s\n`);
    }
    // The context poll: a new messageId on every call (Hermes' poll), each round on a fresh WORKING
    // task, since every poll is stored on its task (see the second table for what that costs).
    const pollJob = async (): Promise<LoadJob> => {
      const t = await workingTask(bridge);
      const first = (await rpc<V1SendResult>(bridge.endpoint, sendBody('status', t.contextId))).result.task!;
      if (first.id !== t.taskId || first.status.state !== 'TASK_STATE_WORKING') throw new Error('the poll did not answer the WORKING task');
      return { url: bridge.endpoint, connections: c, durationS: DURATION_S, headers, body: sendBody('status', t.contextId, '[<id>]'), idReplacement: true };
    };
    await run(await pollJob(), c, 2);
    for (let r = 1; r <= ROUNDS; r++) {
      row.poll.push(await run(await pollJob(), c));
      process.stdout.write(`context poll c=${c} round ${r}: ${num(row.poll.at(-1)!.rps)} req/s\n`);
    }
    row.polls = median(row.poll.map((x) => x.requests));
    rows.push(row);
  }

  // How a task's stored polls weigh on GetTask: each poll is kept (messageId dedupe) in the
  // task's messages, which the history query walks. Polls are added with the store functions.
  const grown = await workingTask(bridge);
  const growth: { polls: number; r: LoadResult }[] = [];
  let stored = 0;
  for (const polls of [0, 1_000, 10_000]) {
    if (polls > stored) {
      const db = Store.open(bridge.storePath);
      db.tx((tx) => {
        for (let i = stored; i < polls; i++) {
          tx.messages.insert({ agent: 'grok', messageId: `poll-${i}`, taskId: grown.taskId, contextId: grown.contextId, role: 'user', kind: 'poll', turn: 1, text: 'status', contentSha256: createHash('sha256').update('status').digest('hex'), createdAt: Date.now() });
        }
      });
      db.close();
      stored = polls;
    }
    const job: LoadJob = { ...bridgeGet, body: getTaskBody(grown.taskId) };
    await run(job, 1, 1);
    growth.push({ polls, r: await run(job, 1) });
  }
  const machineLoad = meter.stop();

  const med = (xs: LoadResult[], k: 'rps' | 'p50' | 'p99'): number => median(xs.map((x) => x[k]));
  const body: string[] = [];
  body.push(
    `Load: autocannon in a child process of its own, ${ROUNDS} rounds of ${DURATION_S} s per server and concurrency, bridge and SDK peer alternately (A, B, A, B…), after 2 s of warm-up each; figures are the median of the rounds. Bridge: \`a2a-mailbridge serve\` (src/ built by scripts/build.ts, as \`npm run build\` does) on a SQLite store (WAL), logging at info to a discarded stderr, no mailbox check due (\`check_interval_s = 3600\`), bearer and Host checked on every call. SDK peer: \`@a2a-js/sdk\` 1.3.0 \`DefaultRequestHandler\` + express \`jsonRpcHandler\` + \`InMemoryTaskStore\`, no authentication. GetTask answers: bridge ${bridgeBytes} bytes, peer ${peerBytes} bytes (same task content). ${describeLoad(machineLoad)}`,
    '',
    table(
      ['call', 'concurrency', 'bridge req/s', 'bridge p50', 'bridge p99', 'SDK peer req/s', 'SDK peer p50', 'SDK peer p99', 'throughput ratio bridge/peer'],
      [
        ...rows.map((r) => [
          'GetTask',
          String(r.c),
          num(med(r.bridge, 'rps')),
          ms(med(r.bridge, 'p50')),
          ms(med(r.bridge, 'p99')),
          num(med(r.peer, 'rps')),
          ms(med(r.peer, 'p50')),
          ms(med(r.peer, 'p99')),
          `${ratio(med(r.bridge, 'rps'), med(r.peer, 'rps'))} (rounds: ${r.bridge.map((b, i) => ratio(b.rps, r.peer[i]!.rps)).join(', ')})`,
        ]),
        ...rows.map((r) => ['context poll (SendMessage, new messageId)', String(r.c), num(med(r.poll, 'rps')), ms(med(r.poll, 'p50')), ms(med(r.poll, 'p99')), '—', '—', '—', `— (≈${num(r.polls)} polls stored on the task during a round)`]),
      ],
    ),
  );
  body.push(
    '',
    `GetTask on one WORKING task as polls accumulate on it (each Hermes poll stores a message row; concurrency 1, ${DURATION_S} s):`,
    '',
    table(['polls stored on the task', 'req/s', 'p50', 'p99'], growth.map((g) => [num(g.polls), num(g.r.rps), ms(g.r.p50), ms(g.r.p99)])),
  );
  const at64 = rows.find((r) => r.c === 64)!;
  const gain = med(at64.bridge, 'rps') / med(at64.peer, 'rps');
  const p99 = med(at64.bridge, 'p99');
  body.push(
    '',
    'Goals:',
    `- GetTask throughput ≥ 1.5× the SDK peer at concurrency 64: ${ratio(med(at64.bridge, 'rps'), med(at64.peer, 'rps'))} — ${verdict(gain >= 1.5)}.`,
    `- GetTask p99 < 5 ms at concurrency 64: ${ms(p99)} — ${verdict(p99 < 5)}.`,
  );
  writeSection('a2a-overhead', 'A2A overhead: GetTask and context poll vs the @a2a-js/sdk peer', body.join('\n'));
} finally {
  await load.stop();
  await peer.stop();
  await bridge.close();
}
