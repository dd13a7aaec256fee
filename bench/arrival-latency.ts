/**
 * Arrival-to-visible latency — from a genuine reply landing in the mailbox (its IMAP APPEND
 * acknowledged by Dovecot) to an A2A answer showing the task COMPLETED.
 * - request-driven (the default; `check_interval_s = 0` so the poll checks): one Hermes-style poll
 *   (SendMessage "status" on the task's context) right after the APPEND; the latency is that poll;
 * - watcher (`mailbox.watch = true`, IMAP IDLE; `check_interval_s = 3600` so polls never check):
 *   GetTask every 10 ms until the task shows COMPLETED, which only the watcher can cause.
 * Median over 20 runs each, every run a new task dispatched through the real path (webhook
 * receiver on loopback, private Dovecot, DNS zone on loopback serving the DKIM key: the test
 * harness, test/helpers/bridge-harness.ts, in this process).
 *
 * Run: npx tsx bench/arrival-latency.ts   (needs Dovecot: apt-get install -y dovecot-imapd; skips without)
 * Knobs: BENCH_RUNS (default 20)
 */
import { findDovecot, startDovecot } from '../test/helpers/dovecot.js';
import { hermesBody, hex, startHarness, type Harness } from '../test/helpers/bridge-harness.js';
import { describeLoad, startLoadMeter } from './lib/machine.js';
import { writeSection } from './lib/results.js';
import { median, ms, quantile, table, verdict } from './lib/stats.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 20);

try {
  findDovecot();
} catch (err) {
  console.log(`arrival-latency: skipped — ${(err as Error).message}`);
  process.exit(0);
}

interface Run {
  appendMs: number;
  visibleMs: number;
}

/** A new WORKING task and its genuine reply, not yet delivered. */
async function taskWithReply(h: Harness): Promise<{ taskId: string; contextId: string; reply: Buffer }> {
  const contextId = `ctx-${hex(8)}`;
  const sent = await h.rpc(hermesBody('Summarise the three strongest 2025 RAG papers.', contextId));
  const task = sent.json.result!.task!;
  if (task.status.state !== 'TASK_STATE_WORKING') throw new Error(`expected WORKING, got ${task.status.state}`);
  const envelope = h.receiver.requests.map((r) => r.envelope).find((e) => e?.task_id === task.id);
  if (!envelope) throw new Error('no webhook for the task');
  return { taskId: task.id, contextId, reply: await h.reply(envelope, { answer: 'Three papers: A, B, C.' }) };
}

async function requestDriven(): Promise<Run[]> {
  const dovecot = await startDovecot();
  const h = await startHarness({ dovecot });
  try {
    const runs: Run[] = [];
    for (let i = 0; i < RUNS + 2; i++) {
      const t = await taskWithReply(h);
      const a = performance.now();
      await dovecot.append(t.reply);
      const landed = performance.now();
      const polled = await h.rpc(hermesBody('status', t.contextId));
      const visible = performance.now();
      const state = polled.json.result?.task?.status?.state;
      if (state !== 'TASK_STATE_COMPLETED') throw new Error(`the poll after arrival answered ${state}`);
      if (i >= 2) runs.push({ appendMs: landed - a, visibleMs: visible - landed }); // 2 warm-up runs
    }
    return runs;
  } finally {
    await h.close();
    await dovecot.stop();
  }
}

async function watcher(): Promise<Run[]> {
  const dovecot = await startDovecot();
  const h = await startHarness({ dovecot, mailboxToml: 'check_interval_s = 3600\nwatch = true\nwatch_tick_s = 5' });
  try {
    const runs: Run[] = [];
    for (let i = 0; i < RUNS + 2; i++) {
      const t = await taskWithReply(h);
      const a = performance.now();
      await dovecot.append(t.reply);
      const landed = performance.now();
      let visible = 0;
      for (const until = landed + 30_000; performance.now() < until; ) {
        const got = await h.rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: t.taskId } });
        if (got.json.result?.status?.state === 'TASK_STATE_COMPLETED') {
          visible = performance.now();
          break;
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      if (!visible) throw new Error('the watcher did not apply the reply within 30 s');
      if (i >= 2) runs.push({ appendMs: landed - a, visibleMs: visible - landed });
    }
    return runs;
  } finally {
    await h.close();
    await dovecot.stop();
  }
}

const meter = startLoadMeter();
const rd = await requestDriven();
console.log(`request-driven: median ${ms(median(rd.map((r) => r.visibleMs)))}`);
let w: Run[] | null = null;
let watcherNote = '';
try {
  w = await watcher();
  console.log(`watcher: median ${ms(median(w.map((r) => r.visibleMs)))}`);
} catch (err) {
  watcherNote = (err as Error).message;
  console.log(`watcher: not measured — ${watcherNote}`);
}
const load = meter.stop();

const row = (name: string, runs: Run[]): string[] => {
  const v = runs.map((r) => r.visibleMs);
  return [name, ms(median(v)), ms(quantile(v, 0.9)), ms(Math.min(...v)), ms(Math.max(...v)), ms(median(runs.map((r) => r.appendMs)))];
};
const wMedian = w ? median(w.map((r) => r.visibleMs)) : Number.NaN;
const body = [
  `From the APPEND of a genuine reply being acknowledged by Dovecot to an A2A answer showing TASK_STATE_COMPLETED, ${RUNS} runs each after 2 warm-up runs, every run a new task. Request-driven: \`check_interval_s = 0\`, one Hermes poll (SendMessage "status" on the context) right after the APPEND — in real use the latency adds the caller's wait until its next poll. Watcher: \`watch = true\` (IMAP IDLE), \`check_interval_s = 3600\`, GetTask every 10 ms until COMPLETED (so up to 10 ms of the figure is the polling step). Bridge, Dovecot (private, loopback), webhook receiver and DNS zone from the test harness. ${describeLoad(load)}`,
  '',
  table(
    ['mode', 'median', 'p90', 'min', 'max', 'APPEND itself (median)'],
    [row('request-driven (one poll after arrival)', rd), w ? row('watcher (IMAP IDLE)', w) : ['watcher', `not measured: ${watcherNote}`, '', '', '', '']],
  ),
  '',
  'Goal:',
  w ? `- Watcher arrival-to-visible median < 2 s: ${ms(wMedian)} — ${verdict(wMedian < 2000)}.` : '- Watcher arrival-to-visible median < 2 s: watcher: not implemented/measured.',
];
writeSection('arrival-latency', 'Arrival-to-visible latency', body.join('\n'));
