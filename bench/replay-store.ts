/**
 * Refused mail cannot fill the disk. One genuine reply of BENCH_REPLAY_MB (default 5) MB is applied,
 * then BENCH_REPLAYS (default 30) replays of it arrive — each the same signed bytes with one extra
 * unsigned header on top, so no two have the same digest. Measured: how much the store grows for
 * the replays (the SQLite file after the bridge closed, its WAL checkpointed into it), beside the
 * reference measured in the same run (the growth for the genuine reply itself, which is kept
 * whole), on a Maildir read by the bridge (`startApp`, `Bridge.checkNow()`, local DKIM
 * verification with an in-process key).
 *
 * Run: npx tsx bench/replay-store.ts    Knobs: BENCH_REPLAY_MB (default 5), BENCH_REPLAYS (default 30)
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { startApp, type App } from '../src/app.js';
import { loadConfig } from '../src/config/config.js';
import { buildReplyMail } from '../src/demo/reply-mail.js';
import { createLogger } from '../src/log.js';
import { deliverToMaildir } from '../src/uplink/maildir-mailbox.js';
import { makeConfigDir } from '../test/helpers/config-dir.js';
import { describeLoad, startLoadMeter } from './lib/machine.js';
import { AGENT, dkimFixture, insertWorkingTasks, MAILBOX_ADDRESS, PROVIDER, SELECTOR } from './lib/mail-fixture.js';
import { writeSection } from './lib/results.js';
import { bytes, ms, num, table, verdict } from './lib/stats.js';

const MB = Number(process.env.BENCH_REPLAY_MB ?? 5);
const REPLAYS = Number(process.env.BENCH_REPLAYS ?? 30);
const GOAL_BYTES = 5 * 1024 * 1024;

const meter = startLoadMeter();
const dkim = dkimFixture();
const root = mkdtempSync(join(tmpdir(), 'mb-bench-replay-'));
const folder = join(root, 'Maildir');
for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(folder, sub), { recursive: true });
const c = makeConfigDir('');
writeFileSync(
  c.configPath,
  `[server]\nlisten = "127.0.0.1:0"\nbearer_file = "bearer"\n[store]\npath = "state/bridge.sqlite"\n[mailbox]\nkind = "maildir"\naddress = "${MAILBOX_ADDRESS}"\ncheck_interval_s = 3600\n[mailbox.maildir]\npath = "${folder}"\n` +
    `[[agents]]\nname = "${AGENT.name}"\naddress = "${AGENT.address}"\n[agents.webhook]\nurl = "http://127.0.0.1:9/hook"\nauth = "both"\nbearer_file = "webhook-bearer"\nsecret_file = "webhook-secret"\n`,
);
const config = loadConfig(c.configPath);
const start = async (): Promise<App> => {
  const app = await startApp(config, { log: createLogger('info', pino.destination('/dev/null')), dkimResolver: dkim.resolver });
  await app.bridge.idle();
  return app;
};
/** The store file's size with the bridge closed (closing checkpoints the WAL into it and removes it). */
const storeBytes = (): number => statSync(config.store.path).size;

let app = await start();
const [task] = insertWorkingTasks(app.bridge.ctx.store, 1);
const line = 'The measurements of every station, one line each, as the job asked: 0123456789 abcdefghij.\n';
const answer = line.repeat(Math.ceil((MB * 1024 * 1024) / line.length));
const genuine = await buildReplyMail({
  from: `Grok Agent <${AGENT.address}>`,
  to: MAILBOX_ADDRESS,
  subject: `Re: your job [${AGENT.tag}:${task!.taskId}]`,
  token: task!.token,
  status: 'done',
  answer,
  dkim: { domain: AGENT.domain, selector: SELECTOR, privateKeyPem: dkim.privateKeyPem },
  provider: PROVIDER,
});
await app.close();
const empty = storeBytes();

app = await start();
await deliverToMaildir(folder, genuine);
let t = performance.now();
const applied = await app.bridge.checkNow();
const genuineMs = performance.now() - t;
if (applied.verdicts['applied:done'] !== 1) throw new Error(`the genuine reply was not applied: ${JSON.stringify(applied)}`);
await app.close();
const afterGenuine = storeBytes();

app = await start();
for (let i = 0; i < REPLAYS; i++) await deliverToMaildir(folder, Buffer.concat([Buffer.from(`X-Replayed: copy ${i + 1} of ${REPLAYS}\r\n`), genuine]));
t = performance.now();
const replayed = await app.bridge.checkNow();
const replayMs = performance.now() - t;
const rows = app.bridge.ctx.store.ledger.ofTask(task!.taskId);
const kept = rows.slice(1).map((r) => app.bridge.ctx.store.ledger.raw(r.id)?.length ?? 0);
await app.close();
const afterReplays = storeBytes();
rmSync(root, { recursive: true, force: true });
rmSync(c.dir, { recursive: true, force: true });
const load = meter.stop();

const growth = afterReplays - afterGenuine;
const verdicts = Object.entries(replayed.verdicts).map(([v, n]) => `${n} ${v}`).join(', ');
writeSection(
  'replay-store',
  'Replays of a genuine reply: store growth',
  [
    `One genuine reply of ${bytes(genuine.length)} (DKIM-signed, provider-stamped) applied, then ${REPLAYS} replays of it, each with one extra unsigned header on top (so each has its own digest), delivered to a Maildir and read by one \`Bridge.checkNow()\`. Store size: the SQLite file with the bridge closed (WAL checkpointed). Before this change every authenticated mail kept its whole raw message: 30 such replays of a 5 MB reply grew the store by 160 MiB (issue 10). ${describeLoad(load)}`,
    '',
    table(
      ['step', 'store growth', 'check', 'verdicts', 'raw bytes kept per message'],
      [
        ['the genuine reply (reference: kept whole)', bytes(afterGenuine - empty), ms(genuineMs), '1 applied:done', bytes(genuine.length)],
        [`${REPLAYS} replays`, bytes(growth), ms(replayMs), `${verdicts}; ${num(replayed.onHeaders)} on the header block`, `${bytes(Math.min(...kept))}–${bytes(Math.max(...kept))}`],
      ],
    ),
    '',
    `- Store growth from ${REPLAYS} replays of a ${MB} MB genuine mail < 5 MB: ${bytes(growth)} — ${verdict(growth < GOAL_BYTES)}.`,
  ].join('\n'),
);
