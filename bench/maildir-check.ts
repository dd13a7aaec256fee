/**
 * a Maildir keyed on the names it has judged, not on an mtime window — the cost
 * of a check by folder size. A Maildir of BENCH_MAILDIR_N messages (default 100,000; ≈2 KiB each,
 * every 20th an earlier tagged mail from the agent, the rest other mail: bench/lib/maildir-fill.ts),
 * read by the bridge (`startApp` with `kind = "maildir"`, `Bridge.checkNow()`, the SQLite ledger).
 * Measured: the first checks of a bridge that has never seen the folder (every name new), the
 * checks with nothing new, 10 genuine replies delivered with an mtime a year old (what a sync tool
 * that keeps mtimes does: the old reader never saw them), and the first checks after a restart
 * (the header blocks skipped before are read again, at most `max_headers_per_check` a check). Beside them, in the
 * same run: `readdir` of the folder's `cur/` alone, the floor of any check.
 *
 * Run: npx tsx bench/maildir-check.ts      Knobs: BENCH_MAILDIR_N (default 100000)
 */
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { startApp, type App } from '../src/app.js';
import { loadConfig } from '../src/config/config.js';
import { createLogger } from '../src/log.js';
import { deliverToMaildir } from '../src/uplink/maildir-mailbox.js';
import { makeConfigDir } from '../test/helpers/config-dir.js';
import { AGENT, dkimFixture, genuineReply, insertWorkingTasks, MAILBOX_ADDRESS } from './lib/mail-fixture.js';
import { fillFolder } from './lib/maildir-fill.js';
import { describeLoad, startLoadMeter } from './lib/machine.js';
import { writeSection } from './lib/results.js';
import { bytes, median, ms, num, quantile, table, verdict } from './lib/stats.js';

const N = Number(process.env.BENCH_MAILDIR_N ?? 100_000);
const meter = startLoadMeter();
const root = mkdtempSync(join(tmpdir(), 'mb-bench-maildir-'));
const t0 = performance.now();
const diskBytes = fillFolder(root, 'Agents', N);
const fillMs = performance.now() - t0;
const folder = join(root, '.Agents');
const dkim = dkimFixture();
const c = makeConfigDir('');
writeFileSync(
  c.configPath,
  `
[server]
listen = "127.0.0.1:0"
bearer_file = "bearer"
[store]
path = "state/bridge.sqlite"
[mailbox]
kind = "maildir"
address = "${MAILBOX_ADDRESS}"
check_interval_s = 3600
max_fetch_per_check = 10000
[mailbox.maildir]
path = "${folder}"
[[agents]]
name = "${AGENT.name}"
address = "${AGENT.address}"
[agents.webhook]
url = "http://127.0.0.1:9/hook"
auth = "both"
bearer_file = "webhook-bearer"
secret_file = "webhook-secret"
`,
);
const config = loadConfig(c.configPath);
const start = async (): Promise<App> => {
  const app = await startApp(config, { log: createLogger('info', pino.destination('/dev/null')), dkimResolver: dkim.resolver });
  await app.bridge.idle();
  return app;
};

interface Check {
  ms: number;
  fetched: number;
  more: boolean;
  stallMs: number;
  applied: number;
}
async function check(app: App): Promise<Check> {
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last - 1);
    last = now;
  }, 1);
  const t = performance.now();
  const s = await app.bridge.checkNow();
  const elapsed = performance.now() - t;
  clearInterval(timer);
  if (!s.ok) throw new Error(`check failed: ${s.error}`);
  return { ms: elapsed, fetched: s.fetched, more: s.more, stallMs: Math.max(worst, performance.now() - last - 1), applied: s.verdicts['applied:done'] ?? 0 };
}
/** Checks until nothing more waits. */
async function settle(app: App): Promise<Check[]> {
  const out: Check[] = [];
  do out.push(await check(app));
  while (out.at(-1)!.more && out.length < 500);
  return out;
}

// A bridge that never saw the folder: its start-up check is the first, then checks until nothing waits.
let s0 = performance.now();
let app = await start();
const startup = performance.now() - s0;
const cold = await settle(app);
const idle: Check[] = [];
for (let i = 0; i < 20; i++) idle.push(await check(app));
const dirRef: number[] = [];
for (let i = 0; i < 5; i++) {
  const t = performance.now();
  await readdir(join(folder, 'cur'));
  dirRef.push(performance.now() - t);
}
// 10 genuine replies that keep an mtime of a year ago.
const tasks = insertWorkingTasks(app.bridge.ctx.store, 10);
for (const t of tasks) {
  const path = await deliverToMaildir(folder, await genuineReply(dkim, t));
  const old = new Date(Date.now() - 365 * 86_400_000);
  utimesSync(path, old, old);
}
const fresh = await check(app);
await app.close();
// A restart on the same store: the names skipped before are read again.
s0 = performance.now();
app = await start();
const restartStartup = performance.now() - s0;
const restart = await settle(app);
const idleAfter: Check[] = [];
for (let i = 0; i < 5; i++) idleAfter.push(await check(app));
await app.close();
rmSync(root, { recursive: true, force: true });
rmSync(c.dir, { recursive: true, force: true });
const load = meter.stop();

const sum = (xs: Check[]): number => xs.reduce((a, x) => a + x.ms, 0);
const row = (what: string, xs: Check[]): string[] => [
  what,
  num(xs.length),
  ms(sum(xs)),
  ms(Math.max(...xs.map((x) => x.ms))),
  ms(median(xs.map((x) => x.ms))),
  ms(Math.max(...xs.map((x) => x.stallMs))),
  num(xs.reduce((a, x) => a + x.fetched, 0)),
];
const idleMedian = median(idle.map((x) => x.ms));
const body = [
  `A Maildir of ${num(N)} messages (${bytes(diskBytes)} written in ${ms(fillMs)}; every 20th a tagged mail from the agent to a task the store does not know, the rest other mail), read by \`Bridge.checkNow()\` with the SQLite ledger (\`max_fetch_per_check = 10000\`, local DKIM verification with an in-process key). "Longest stall": the largest lateness of a 1 ms timer during a check. ${describeLoad(load)}`,
  '',
  table(
    ['case', 'checks', 'total', 'slowest check', 'median check', 'longest stall', 'messages handed to the gates'],
    [
      [`start-up (store opened, the first check of ${num(N)} new names)`, '1', ms(startup), ms(startup), ms(startup), '—', '—'],
      row('first sight of the folder: the checks after it, until nothing waits', cold),
      row('nothing new (20 checks)', idle),
      row(`10 genuine replies with an mtime a year old (all ${fresh.applied} applied)`, [fresh]),
      ['start-up after a restart (the first check)', '1', ms(restartStartup), ms(restartStartup), ms(restartStartup), '—', '—'],
      row('after a restart: the checks after it, until nothing waits', restart),
      row('nothing new after the restart (5 checks)', idleAfter),
    ],
  ),
  '',
  `Reference, same run: \`readdir\` of \`cur/\` (${num(N)} names) alone: median ${ms(median(dirRef))} (p90 ${ms(quantile(dirRef, 0.9))}). A check with nothing new stats \`new/\` and \`cur/\` and lists them only when one changed (or a minute has passed); it opens no file.`,
  '',
  'Goals:',
  `- Every file judged once whatever its mtime: ${fresh.applied} of 10 replies with a year-old mtime applied in the check after they landed — ${verdict(fresh.applied === 10)}.`,
  `- Per-check cost bounded for ${num(N)} files (only new names opened): nothing new ${ms(idleMedian)} (median; a bare listing of \`cur/\`: ${ms(median(dirRef))}); the slowest check ever ${ms(Math.max(startup, restartStartup, ...[...cold, ...restart].map((x) => x.ms)))} (at most \`max_headers_per_check\` header reads a check).`,
];
writeSection('maildir-check', 'Maildir check: keyed on the names judged, by folder size', body.join('\n'));
