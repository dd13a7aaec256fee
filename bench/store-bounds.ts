/**
 * the store and the logs stay bounded.
 *
 * WAL: the bridge (`startApp`, a Maildir config, its clock injected) writes 60 MiB of ledger rows
 * (100 KiB of raw bytes each, one transaction per row, as checks do) while a second connection
 * holds a read snapshot (a `sqlite3` shell left open); then the reader lets go, one more check
 * writes, and the bridge clock moves one minute on before the next A2A call's refresh. The WAL
 * file's size is read at each step.
 * Logs: the service logger (`log.max_size_mb = 1`, `max_files = 2`) through 10 restarts that each
 * rotate once, and a burst of 20 MB from 40,000 log calls (100 an event-loop turn).
 *
 * Run: npx tsx bench/store-bounds.ts
 */
import Database from 'better-sqlite3';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp } from '../src/app.js';
import { loadConfig } from '../src/config/config.js';
import { createLogger, createServiceLogger, rolledLogFiles } from '../src/log.js';
import { makeConfigDir, minimalToml } from '../test/helpers/config-dir.js';
import { describeLoad, startLoadMeter } from './lib/machine.js';
import { writeSection } from './lib/results.js';
import { bytes, ms, table, verdict } from './lib/stats.js';

const meter = startLoadMeter();
const dir = makeConfigDir(minimalToml());
const config = loadConfig(dir.configPath);
mkdirSync(join(config.mailbox.maildirPath!, 'new'), { recursive: true });
let offset = 0;
const app = await startApp(config, { log: createLogger('silent'), now: () => Date.now() + offset });
await app.bridge.idle();
const db = app.bridge.ctx.store;
const raw = Buffer.alloc(100 * 1024, 0x61);
let n = 0;
const write = (mib: number): void => {
  for (let i = 0; i < mib * 10; i++, n++) {
    db.tx((tx) => tx.ledger.record({ source: `bench:${n}`, seenAt: n, messageId: null, fromHeader: null, subject: null, dateHeader: null, size: raw.length, rawSha256: `b${n}`, raw, agent: null, taskId: null, verdict: 'no-task-id', reason: 'bench' }));
  }
};
const steps: [string, number, string][] = [];
write(4);
steps.push(['before the reader (4 MiB written)', db.walBytes(), '']);
const reader = new Database(config.store.path, { readonly: true });
reader.prepare('BEGIN').run();
reader.prepare('SELECT count(*) FROM ledger').get();
const t0 = performance.now();
write(60);
steps.push(['a reader holds a snapshot; 60 MiB more written', db.walBytes(), `${ms(performance.now() - t0)} of writes`]);
offset += 61_000;
const r0 = performance.now();
await app.bridge.refresh();
steps.push(['a minute later, the reader still there (the refresh never waits)', db.walBytes(), `refresh ${ms(performance.now() - r0)}`]);
reader.prepare('COMMIT').run();
reader.close();
steps.push(['the reader lets go', db.walBytes(), '']);
write(0.1);
steps.push(['the next check writes (journal_size_limit)', db.walBytes(), '']);
offset += 61_000;
const r1 = performance.now();
await app.bridge.refresh();
steps.push(['one minute after the reader let go: the next refresh', db.walBytes(), `refresh ${ms(performance.now() - r1)}`]);
await app.close();
rmSync(dir.dir, { recursive: true, force: true });
const afterMinute = steps.at(-1)![1];

// Logs.
const logDir = mkdtempSync(join(tmpdir(), 'mb-bench-logs-'));
const file = join(logDir, 'mailbridge.log');
const line = 'x'.repeat(500);
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
for (let run = 0; run < 10; run++) {
  const log = await createServiceLogger({ level: 'info', file, maxBytes: 1024 * 1024, maxFiles: 2 });
  for (let i = 0; i < 2500; i++) {
    log.info({ run, i, line }, 'restart');
    if (i % 100 === 0) await turn();
  }
  await turn();
  await new Promise<void>((r) => log.flush(() => r()));
}
const afterRestarts = rolledLogFiles(file).length;
rmSync(logDir, { recursive: true, force: true });
const burstDir = mkdtempSync(join(tmpdir(), 'mb-bench-logs-'));
const burstFile = join(burstDir, 'mailbridge.log');
const blog = await createServiceLogger({ level: 'info', file: burstFile, maxBytes: 1024 * 1024, maxFiles: 50 });
for (let i = 0; i < 40_000; i++) {
  blog.info({ i, line }, 'burst');
  if (i % 100 === 0) await turn();
}
await turn();
await new Promise<void>((r) => blog.flush(() => r()));
const burstSizes = rolledLogFiles(burstFile).map(([p]) => statSync(p).size);
rmSync(burstDir, { recursive: true, force: true });
const load = meter.stop();

const body = [
  `WAL: the bridge's own store (startApp, Maildir config, injected clock), 100 KiB ledger rows one transaction each; a second connection holds a read snapshot (\`BEGIN; SELECT …\`) while 60 MiB are written, then lets go; the bridge clock is moved on by 61 s before each refresh (the refresh every A2A call and every watcher tick runs). Logs: \`createServiceLogger\` with \`max_size_mb = 1\`. ${describeLoad(load)}`,
  '',
  table(['step', 'WAL file', 'note'], steps.map(([s, b, note]) => [s, bytes(b), note])),
  '',
  table(
    ['logs', 'result'],
    [
      ['files after 10 restarts (max_files = 2; each run rotates once)', `${afterRestarts} (at most max_files + the current one = 3; before: 11)`],
      [`largest of ${burstSizes.length} files after a 20 MB burst (max_size_mb = 1)`, `${bytes(Math.max(...burstSizes))} (before: files of 3–4 MiB)`],
    ],
  ),
  '',
  'Goals:',
  `- WAL one minute after a pinned reader lets go < 8 MB: ${bytes(afterMinute)} — ${verdict(afterMinute < 8 * 1024 * 1024)}.`,
  `- log.max_files held across restarts: ${afterRestarts} files — ${verdict(afterRestarts <= 3)}; no file far over max_size_mb in a burst: largest ${bytes(Math.max(...burstSizes))} — ${verdict(Math.max(...burstSizes) <= 1.1 * 1024 * 1024)}.`,
];
writeSection('store-bounds', 'Store and logs stay bounded', body.join('\n'));
