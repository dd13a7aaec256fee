/**
 * A Maildir flood of untagged junk ("not ours": neither From nor Subject names an agent or a tag)
 * delivered ahead of one genuine reply: the cost per junk file of deciding "not ours", and the
 * checks and seconds until the reply is applied. BENCH_JUNK_N junk files (default 21,000, the
 * attack review's flood), each with ~17.5 KB of header fields (a provider's Received, From and
 * Subject at the top, then 170 fields of ~100 bytes, so its header block runs past the 16 KiB
 * the narrowing reads first), written into `new/` an hour old, then the reply delivered now; read
 * by `Bridge.checkNow()` with default settings and the SQLite store. Beside it, in the same run on
 * the same files: bare Node reading each file's first 16 KiB as the bridge must (open with
 * O_NOFOLLOW|O_NONBLOCK, fstat, read, close), once with synchronous calls into one buffer and once
 * on the thread pool 16 at a time with a buffer per file — the floors of that read.
 * "Longest stall": the largest lateness of a 1 ms timer during the checks.
 *
 * Run: npx tsx bench/maildir-junk.ts   Knobs: BENCH_JUNK_N (default 21000), BENCH_JUNK_NO_WRITE=1 (print only)
 */
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { startApp } from '../src/app.js';
import { loadConfig } from '../src/config/config.js';
import { createLogger } from '../src/log.js';
import { deliverToMaildir } from '../src/uplink/maildir-mailbox.js';
import { makeConfigDir } from '../test/helpers/config-dir.js';
import { describeLoad, startLoadMeter } from './lib/machine.js';
import { AGENT, dkimFixture, genuineReply, insertWorkingTasks, MAILBOX_ADDRESS } from './lib/mail-fixture.js';
import { writeSection } from './lib/results.js';
import { ms, num, table, verdict } from './lib/stats.js';

const N = Number(process.env.BENCH_JUNK_N ?? 21_000);
/** What a GetTask call waits for a check at most (`mailbox.check_wait_ms`, default). */
const CHECK_WAIT_MS = 5000;
const PREFIX = 16 * 1024;
const FLAGS = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;

/** One junk file: untagged, ~17.5 KB of header fields. */
function junk(i: number): string {
  const fields = [
    `Return-Path: <news${i}@other.example>`,
    `Received: from mx.other.example (mx.other.example [203.0.113.${i % 250}])\r\n\tby mx1.messagingengine.com (Postfix) with ESMTPS id J${i.toString(36).toUpperCase()}\r\n\tfor <${MAILBOX_ADDRESS}>; Tue, 2 Dec 2026 10:00:00 +0000`,
    `From: Weekly News <news${i}@other.example>`,
    `Subject: your weekly digest #${i}`,
    ...Array.from({ length: 170 }, (_, k) => `X-Junk-${k}: ${'x'.repeat(90)}`),
  ];
  return `${fields.join('\r\n')}\r\n\r\nnothing here\r\n`;
}

const meter = startLoadMeter();
const root = fs.mkdtempSync(join(tmpdir(), 'mb-bench-junk-'));
const folder = join(root, 'Maildir');
for (const sub of ['cur', 'new', 'tmp']) fs.mkdirSync(join(folder, sub), { recursive: true });
const dkim = dkimFixture();
const c = makeConfigDir('');
fs.writeFileSync(
  c.configPath,
  `[server]\nlisten = "127.0.0.1:0"\nbearer_file = "bearer"\n[store]\npath = "state/bridge.sqlite"\n[mailbox]\nkind = "maildir"\naddress = "${MAILBOX_ADDRESS}"\ncheck_interval_s = 3600\n[mailbox.maildir]\npath = "${folder}"\n` +
    `[[agents]]\nname = "${AGENT.name}"\naddress = "${AGENT.address}"\n[agents.webhook]\nurl = "http://127.0.0.1:9/hook"\nauth = "both"\nbearer_file = "webhook-bearer"\nsecret_file = "webhook-secret"\n`,
);
const app = await startApp(loadConfig(c.configPath), { log: createLogger('info', pino.destination('/dev/null')), dkimResolver: dkim.resolver });
await app.bridge.idle();
const [task] = insertWorkingTasks(app.bridge.ctx.store, 1);

// The flood, an hour old and a millisecond apart, then the reply.
const names: string[] = [];
const old = Date.now() - 3600_000;
for (let i = 0; i < N; i++) {
  const name = `${1_700_000_000 + i}.junk${i}.bench`;
  const path = join(folder, 'new', name);
  fs.writeFileSync(path, junk(i));
  fs.utimesSync(path, new Date(old + i), new Date(old + i));
  names.push(path);
}
await deliverToMaildir(folder, await genuineReply(dkim, task!));

/** CPU time (user + system) of this process, ms. */
const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
/** Bare Node, synchronous: open, fstat, read of the first 16 KiB into one buffer, close. */
function bareSync(): number {
  const buf = Buffer.allocUnsafe(PREFIX);
  const t = performance.now();
  for (const p of names) {
    const fd = fs.openSync(p, FLAGS);
    fs.fstatSync(fd);
    fs.readSync(fd, buf, 0, PREFIX, 0);
    fs.closeSync(fd);
  }
  return performance.now() - t;
}
/** Bare Node on the thread pool, 16 files at a time: lstat, open, fstat, read into a buffer of its own, close. */
async function barePool(): Promise<number> {
  const [lstat, open, fstat, read, close] = [promisify(fs.lstat), promisify(fs.open), promisify(fs.fstat), promisify(fs.read), promisify(fs.close)];
  const one = async (p: string): Promise<void> => {
    await lstat(p);
    const fd = await open(p, FLAGS);
    await fstat(fd);
    await read(fd, Buffer.alloc(PREFIX), 0, PREFIX, 0);
    await close(fd);
  };
  const t = performance.now();
  for (let i = 0; i < names.length; i += 16) await Promise.all(names.slice(i, i + 16).map(one));
  return performance.now() - t;
}
let c0 = cpuMs();
const sync = bareSync();
const syncCpu = cpuMs() - c0;
c0 = cpuMs();
const pool = await barePool();
const poolCpu = cpuMs() - c0;

let last = performance.now();
let stall = 0;
const timer = setInterval(() => {
  const now = performance.now();
  stall = Math.max(stall, now - last - 1);
  last = now;
}, 1);
const checks: { ms: number; notOurs: number }[] = [];
let appliedOn: number | null = null;
c0 = cpuMs();
while (checks.length < 20) {
  const t = performance.now();
  const s = await app.bridge.checkNow();
  checks.push({ ms: performance.now() - t, notOurs: s.notOurs });
  if (!s.ok) throw new Error(`check ${checks.length} failed: ${s.error}`);
  if (app.bridge.ctx.store.tasks.get(task!.taskId)?.state === 'COMPLETED') {
    appliedOn = checks.length;
    break;
  }
}
const checkCpu = cpuMs() - c0;
clearInterval(timer);
stall = Math.max(stall, performance.now() - last - 1);
await app.close();
fs.rmSync(root, { recursive: true, force: true });
fs.rmSync(c.dir, { recursive: true, force: true });
const load = meter.stop();

const total = checks.reduce((a, x) => a + x.ms, 0);
const us = (v: number): string => `${num(v * 1000, 1)} µs`;
const body = [
  `${num(N)} untagged junk files (${num(Buffer.byteLength(junk(0)))} bytes each, ~17.5 KB of header fields; From and Subject name no agent and no tag), an hour old in \`new/\`, then one genuine reply delivered now, read by \`Bridge.checkNow()\` with default settings (\`max_prefixes_per_check = 25000\`, a junk file found not ours on its first read counting a quarter) and the SQLite store. Bare Node in the same run, on the same files (page cache warm): each file's first 16 KiB read as the bridge must open it. "Calls" are GetTask calls, each waiting up to \`check_wait_ms\` (${num(CHECK_WAIT_MS)} ms) for the check. ${describeLoad(load)}`,
  '',
  table(
    ['what', 'total', 'per junk file', 'CPU time per junk file (this process)'],
    [
      ['bare Node, synchronous (open, fstat, read 16 KiB into one buffer, close)', ms(sync), us(sync / N), us(syncCpu / N)],
      ['bare Node, thread pool 16 at a time (lstat, open, fstat, read into a buffer of its own, close)', ms(pool), us(pool / N), us(poolCpu / N)],
      [`the bridge: ${checks.length === 1 ? 'the check' : `the ${checks.length} checks`} until the reply was applied (${num(checks.reduce((a, x) => a + x.notOurs, 0))} files found not ours)`, ms(total), us(total / N), us(checkCpu / N)],
    ],
  ),
  '',
  `- The reply applied on the first check that sees it (goal): ${appliedOn === null ? 'not within 20 checks' : `check ${appliedOn}`} — ${verdict(appliedOn === 1)}; about ${num(Math.max(1, Math.ceil(total / CHECK_WAIT_MS)))} GetTask call(s) of ${num(CHECK_WAIT_MS)} ms. Longest stall of the event loop during the checks: ${ms(stall)} (on a loaded machine, the scheduler's too).`,
];
if (process.env.BENCH_JUNK_NO_WRITE) console.log(body.join('\n'));
else writeSection('maildir-junk', 'Maildir junk flood: the cost of "not ours"', body.join('\n'));
