/**
 * Messages per second through the whole gate stack on one core, without and with local DKIM
 * verification (RSA-2048), on pre-built genuine replies (each passes every gate and is judged
 * `applied:done`). The DKIM key comes from an in-process resolver function, so no DNS is measured.
 *
 * Two measurements:
 * - the judge alone (`judgeMessage`, src/core/judge.ts: gates 1–11), the store's answers given
 *   from memory and the decision not written;
 * - the whole per-message work of a check: `Bridge.checkNow()` on an in-memory mailbox holding the
 *   replies, with the SQLite store — the gates plus, per message, the ledger row, the promotion
 *   and the watermark in one transaction.
 * Both run in this one Node process, sequentially (one message at a time), i.e. on one core.
 *
 * Run: npx tsx bench/gates.ts      Knobs: BENCH_MESSAGES (replies per run, default 400)
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { startApp } from '../src/app.js';
import { loadConfig, type Config } from '../src/config/config.js';
import { judgeMessage, judgeRulesOf, type Decision } from '../src/core/judge.js';
import { createLogger } from '../src/log.js';
import type { TaskRow } from '../src/store/task-rows.js';
import type { TurnRow } from '../src/store/turns.js';
import { makeConfigDir } from '../test/helpers/config-dir.js';
import { AGENT, dkimFixture, genuineReply, insertWorkingTasks, MAILBOX_ADDRESS, type BenchTask, type DkimFixture } from './lib/mail-fixture.js';
import { describeLoad, startLoadMeter } from './lib/machine.js';
import { MemoryMailbox } from './lib/memory-mailbox.js';
import { writeSection } from './lib/results.js';
import { num, table, verdict } from './lib/stats.js';

const N = Number(process.env.BENCH_MESSAGES ?? 400);
const PURE_SECONDS = 3;

function toml(verifyDkim: boolean): string {
  return `
[server]
listen = "127.0.0.1:0"
bearer_file = "bearer"
[store]
path = "state/bridge.sqlite"
[mailbox]
kind = "maildir"
address = "${MAILBOX_ADDRESS}"
verify_dkim = ${verifyDkim}
max_fetch_per_check = 10000
[mailbox.maildir]
path = "Maildir"
[[agents]]
name = "${AGENT.name}"
address = "${AGENT.address}"
[agents.webhook]
url = "http://127.0.0.1:9/hook"
auth = "both"
bearer_file = "webhook-bearer"
secret_file = "webhook-secret"
`;
}

function configFor(verifyDkim: boolean): { config: Config; dir: string } {
  const c = makeConfigDir(toml(verifyDkim));
  mkdirSync(join(c.dir, 'Maildir', 'cur'), { recursive: true });
  writeFileSync(c.configPath, toml(verifyDkim));
  return { config: loadConfig(c.configPath), dir: c.dir };
}

interface Rate {
  messages: number;
  seconds: number;
  cpuSeconds: number;
}

/** The judge over `mails` in a loop for PURE_SECONDS; every message must be judged applied:done. */
async function pureStack(config: Config, dkim: DkimFixture, mails: { raw: Buffer; task: BenchTask }[], verifyDkim: boolean): Promise<Rate> {
  const rules = { ...judgeRulesOf(config), verifyDkim };
  const tasks = new Map(mails.map((m) => [m.task.taskId, m.task]));
  const one = async (raw: Buffer, now: number): Promise<void> => {
    const d = await judgeMessage<Decision>({ raw, size: raw.length, tooLarge: false, receivedAt: now }, {
      rules,
      resolver: dkim.resolver,
      now: () => now,
      store: {
        seenDigest: () => false,
        authenticatedWith: () => undefined,
        messageIdApplied: () => false,
        task: (id) => {
          const t = tasks.get(id);
          if (!t) return undefined;
          const task = { id, agent: config.agents[0]!.name, contextId: 'ctx', state: 'WORKING', stateReason: null, failedBy: null, turn: 1, caller: null, createdAt: now - 60_000, updatedAt: now - 60_000, deadlineAt: null } satisfies TaskRow;
          const turn = { taskId: id, turn: 1, ask: '', replyToken: t.token, deadlineAt: now + 3600_000, dispatchId: 'msg_bench', envelope: Buffer.alloc(0), dispatchState: 'accepted', nextAttemptAt: null, acceptedAt: now - 60_000, replyStatus: null, replyText: null, replyLedgerId: null, repliedAt: null, createdAt: now - 60_000 } satisfies TurnRow;
          return { task, turn };
        },
      },
      settle: (decide) => decide(),
    });
    if (d.kind !== 'apply' || d.verdict !== 'applied:done') throw new Error(`judgeMessage: ${d.kind} ${'verdict' in d ? d.verdict : ''} ${d.reason}`);
  };
  for (const m of mails.slice(0, 50)) await one(m.raw, Date.now()); // warm-up
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let count = 0;
  while (performance.now() - t0 < PURE_SECONDS * 1000) {
    for (const m of mails) {
      await one(m.raw, Date.now());
      count++;
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { messages: count, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
}

/** `Bridge.checkNow()` over an in-memory mailbox of N genuine replies to N open tasks. */
async function withStore(verifyDkim: boolean, dkim: DkimFixture): Promise<Rate> {
  const { config, dir } = configFor(verifyDkim);
  const mailbox = new MemoryMailbox();
  const app = await startApp(config, { log: createLogger('info', pino.destination('/dev/null')), mailbox, dkimResolver: dkim.resolver });
  try {
    await app.bridge.idle();
    const warm = insertWorkingTasks(app.bridge.ctx.store, 20);
    mailbox.add(await Promise.all(warm.map((t) => genuineReply(dkim, t))));
    await app.bridge.checkNow();
    const tasks = insertWorkingTasks(app.bridge.ctx.store, N);
    mailbox.add(await Promise.all(tasks.map((t) => genuineReply(dkim, t))));
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let applied = 0;
    for (;;) {
      const s = await app.bridge.checkNow();
      applied += s.verdicts['applied:done'] ?? 0;
      if (!s.ok) throw new Error(`check failed: ${s.error}`);
      if (!s.more) break;
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    if (applied !== N) throw new Error(`${applied} of ${N} replies applied`);
    return { messages: N, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
  } finally {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const meter = startLoadMeter();
const dkim = dkimFixture();
const { config, dir } = configFor(true);
const tasks: BenchTask[] = Array.from({ length: N }, () => ({ taskId: crypto.randomUUID(), token: randomBytes(16).toString('hex') }));
const built = performance.now();
const mails = await Promise.all(tasks.map(async (task) => ({ task, raw: await genuineReply(dkim, task) })));
const buildMs = performance.now() - built;
const avgBytes = mails.reduce((n, m) => n + m.raw.length, 0) / mails.length;

const rows: { name: string; dkim: boolean; r: Rate }[] = [];
for (const verifyDkim of [false, true]) {
  const r = await pureStack(config, dkim, mails, verifyDkim);
  rows.push({ name: 'the judge alone (gates 1–11, store answers from memory)', dkim: verifyDkim, r });
  console.log(`judge alone, DKIM ${verifyDkim ? 'on' : 'off'}: ${num(r.messages / r.seconds)} msg/s`);
}
for (const verifyDkim of [false, true]) {
  const r = await withStore(verifyDkim, dkim);
  rows.push({ name: 'whole check per message (`checkNow()`, in-memory mailbox, SQLite ledger + promotion)', dkim: verifyDkim, r });
  console.log(`checkNow with the store, DKIM ${verifyDkim ? 'on' : 'off'}: ${num(r.messages / r.seconds)} msg/s`);
}
rmSync(dir, { recursive: true, force: true });
const load = meter.stop();

const rate = (x: Rate): number => x.messages / x.seconds;
const pureOff = rate(rows[0]!.r);
const pureOn = rate(rows[1]!.r);
const storeOff = rate(rows[2]!.r);
const storeOn = rate(rows[3]!.r);
const body = [
  `${N} distinct genuine replies (≈${num(avgBytes)} bytes each: provider-stamped, DKIM-signed RSA-2048 relaxed/relaxed, text/plain with a ≈1.2 KB answer; built in ${num(buildMs)} ms), each passing every gate to \`applied:done\`. One Node process, one message at a time (so one core: CPU time per message is shown); DKIM keys from an in-process resolver. The pure stack loops over the replies for ${PURE_SECONDS} s; the whole check applies each reply once to its own open task. ${describeLoad(load)}`,
  '',
  table(
    ['what', 'local DKIM verification', 'messages/s', 'µs per message', 'CPU µs per message'],
    rows.map(({ name, dkim: d, r }) => [name, d ? 'on (RSA-2048)' : 'off', num(rate(r)), num((r.seconds / r.messages) * 1e6), num((r.cpuSeconds / r.messages) * 1e6)]),
  ),
  '',
  'Goals:',
  `- ≥ 1,000 messages/s through the gates without DKIM verification: ${num(pureOff)}/s (pure stack), ${num(storeOff)}/s (whole check with the store) — ${verdict(pureOff >= 1000)}${pureOff >= 1000 && storeOff < 1000 ? ' for the gates; the store work per message brings the whole check below it' : ''}.`,
  `- ≥ 300 messages/s with it: ${num(pureOn)}/s (pure stack), ${num(storeOn)}/s (whole check) — ${verdict(pureOn >= 300)}.`,
];
writeSection('gates', 'Gate stack throughput (one core)', body.join('\n'));
