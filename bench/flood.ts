/**
 * A flood cannot hold back a genuine reply. BENCH_FLOOD_N (default 5,000) forged tagged mails are
 * queued before one genuine reply — each copies a live task's tag, the agent's From, the leaked
 * reply token and an Authentication-Results saying pass among its own headers (below the border);
 * the provider stamps what it saw (dmarc=fail). Measured: the check on which the reply is applied
 * (goal: the first, at most the second), on IMAP (a private Dovecot 2.3, the mail APPENDed in one
 * MULTIAPPEND) and on a Maildir, each beside a reference measured in the same run (the same kind
 * of folder holding the genuine reply alone). Default settings (`max_headers_per_check = 10000`,
 * `max_fetch_per_check = 50`, local DKIM verification with an in-process key). "Longest stall":
 * the largest lateness of a 1 ms timer during the checks.
 *
 * Run: npx tsx bench/flood.ts   (IMAP needs Dovecot: apt-get install -y dovecot-imapd; skipped without)
 * Knobs: BENCH_FLOOD_N (default 5000)
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { openMailbox, startApp, type App } from '../src/app.js';
import { loadConfig, type Config } from '../src/config/config.js';
import { buildReplyMail } from '../src/demo/reply-mail.js';
import { createLogger } from '../src/log.js';
import { deliverToMaildir } from '../src/uplink/maildir-mailbox.js';
import { makeConfigDir, writeSecret } from '../test/helpers/config-dir.js';
import { findDovecot, startDovecot, type DovecotHandle } from '../test/helpers/dovecot.js';
import { multiAppend } from '../test/integration/faults/imap-faults.js';
import { describeLoad, startLoadMeter } from './lib/machine.js';
import { AGENT, dkimFixture, genuineReply, imapToml, insertWorkingTasks, MAILBOX_ADDRESS, PROVIDER, type BenchTask, type DkimFixture } from './lib/mail-fixture.js';
import { MeteredMailbox } from './lib/metered-mailbox.js';
import { writeSection } from './lib/results.js';
import { bytes, ms, num, table, verdict } from './lib/stats.js';

const N = Number(process.env.BENCH_FLOOD_N ?? 5000);
/** Checks tried before giving up on the reply. */
const MAX_CHECKS = 200;

let dovecotFound = true;
try {
  findDovecot();
} catch {
  dovecotFound = false;
}

/** A forgery of a reply to `task`: everything but the agent's signature and an honest provider stamp. */
function forged(task: BenchTask, n: number): Promise<Buffer> {
  return buildReplyMail({
    from: `Grok Agent <${AGENT.address}>`,
    to: MAILBOX_ADDRESS,
    subject: `Re: your job [${AGENT.tag}:${task.taskId}]`,
    token: task.token,
    status: 'done',
    answer: `Forged answer ${n}: wire the money to account 4711.`,
    headers: { 'Authentication-Results': `${PROVIDER.authservId}; dkim=pass header.d=${AGENT.domain} header.b=AAAAAAAA; dmarc=pass header.from=${AGENT.domain}` },
    provider: { ...PROVIDER, fromHost: 'mx.evil.example', fromIp: '203.0.113.66', results: `dkim=none; spf=fail smtp.mailfrom=${AGENT.domain}; dmarc=fail (p=reject) header.from=${AGENT.domain}` },
  });
}

interface Run {
  /** The check (1-based) on which the reply was applied; null when it was not within MAX_CHECKS. */
  appliedOn: number | null;
  checks: number;
  ms: number;
  stallMs: number;
  headers: number;
  whole: number;
  bytes: number;
  refusedOnHeaders: number;
}

/** Checks (`Bridge.checkNow`) until the task is COMPLETED; the event loop watched meanwhile. */
async function untilApplied(app: App, mailbox: MeteredMailbox, task: BenchTask): Promise<Run> {
  const run: Run = { appliedOn: null, checks: 0, ms: 0, stallMs: 0, headers: 0, whole: 0, bytes: 0, refusedOnHeaders: 0 };
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    run.stallMs = Math.max(run.stallMs, now - last - 1);
    last = now;
  }, 1);
  try {
    while (run.checks < MAX_CHECKS) {
      const t = performance.now();
      const s = await app.bridge.checkNow();
      run.ms += performance.now() - t;
      run.checks += 1;
      if (!s.ok) throw new Error(`check ${run.checks} failed: ${s.error}`);
      run.headers += mailbox.last.messages;
      run.whole += s.fetched - s.onHeaders;
      run.refusedOnHeaders += s.onHeaders;
      run.bytes += mailbox.last.bytesFetched;
      if (app.bridge.ctx.store.tasks.get(task.taskId)?.state === 'COMPLETED') {
        run.appliedOn = run.checks;
        break;
      }
    }
  } finally {
    clearInterval(timer);
    run.stallMs = Math.max(run.stallMs, performance.now() - last - 1);
  }
  return run;
}

/** A bridge on `config` with a metered mailbox, a WORKING task, and `mails(task)` delivered by `deliver`. */
async function measure(config: Config, dkim: DkimFixture, mails: (task: BenchTask) => Promise<Buffer[]>, deliver: (raws: Buffer[]) => Promise<void>): Promise<Run> {
  const mailbox = new MeteredMailbox(openMailbox(config));
  const app = await startApp(config, { log: createLogger('info', pino.destination('/dev/null')), mailbox, dkimResolver: dkim.resolver });
  try {
    await app.bridge.idle();
    const [task] = insertWorkingTasks(app.bridge.ctx.store, 1);
    await deliver(await mails(task!));
    return await untilApplied(app, mailbox, task!);
  } finally {
    await app.close();
  }
}

const floodThenReply = (dkim: DkimFixture) => async (task: BenchTask): Promise<Buffer[]> => {
  const flood: Buffer[] = [];
  for (let i = 0; i < N; i++) flood.push(await forged(task, i));
  return [...flood, await genuineReply(dkim, task)];
};
const replyAlone = (dkim: DkimFixture) => async (task: BenchTask): Promise<Buffer[]> => [await genuineReply(dkim, task)];

async function imapCase(dkim: DkimFixture, dovecot: DovecotHandle, folder: string, mails: (t: BenchTask) => Promise<Buffer[]>): Promise<Run> {
  await dovecot.createFolder(folder);
  const c = makeConfigDir('');
  try {
    writeFileSync(c.configPath, imapToml({ port: dovecot.port, user: dovecot.user, folder, storePath: join(c.dir, 'state', 'bridge.sqlite') }).replace('check_interval_s = 0', 'check_interval_s = 3600'));
    writeSecret(c.dir, 'imap-password', dovecot.password);
    return await measure(loadConfig(c.configPath), dkim, mails, async (raws) => void (await multiAppend(dovecot, folder, raws, 600_000)));
  } finally {
    rmSync(c.dir, { recursive: true, force: true });
  }
}

async function maildirCase(dkim: DkimFixture, mails: (t: BenchTask) => Promise<Buffer[]>): Promise<Run> {
  const root = mkdtempSync(join(tmpdir(), 'mb-bench-flood-'));
  const folder = join(root, 'Maildir');
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(folder, sub), { recursive: true });
  const c = makeConfigDir('');
  try {
    writeFileSync(
      c.configPath,
      `[server]\nlisten = "127.0.0.1:0"\nbearer_file = "bearer"\n[store]\npath = "state/bridge.sqlite"\n[mailbox]\nkind = "maildir"\naddress = "${MAILBOX_ADDRESS}"\ncheck_interval_s = 3600\n[mailbox.maildir]\npath = "${folder}"\n` +
        `[[agents]]\nname = "${AGENT.name}"\naddress = "${AGENT.address}"\n[agents.webhook]\nurl = "http://127.0.0.1:9/hook"\nauth = "both"\nbearer_file = "webhook-bearer"\nsecret_file = "webhook-secret"\n`,
    );
    // Delivered a second apart, oldest first, an hour ago: the flood is older than the reply.
    let at = Date.now() - 3600_000 - N * 1000;
    const deliver = async (raws: Buffer[]): Promise<void> => {
      for (const raw of raws) {
        const path = await deliverToMaildir(folder, raw);
        at += 1000;
        utimesSync(path, new Date(at), new Date(at));
      }
    };
    return await measure(loadConfig(c.configPath), dkim, mails, deliver);
  } finally {
    rmSync(c.dir, { recursive: true, force: true });
    rmSync(root, { recursive: true, force: true });
  }
}

const meter = startLoadMeter();
const dkim = dkimFixture();
const results: { kind: string; reference: Run; flood: Run }[] = [];
if (dovecotFound) {
  const dovecot = await startDovecot();
  try {
    results.push({ kind: 'IMAP (Dovecot)', reference: await imapCase(dkim, dovecot, 'Alone', replyAlone(dkim)), flood: await imapCase(dkim, dovecot, 'Flooded', floodThenReply(dkim)) });
  } finally {
    await dovecot.stop();
  }
} else {
  console.log('flood: IMAP skipped — Dovecot is not installed');
}
results.push({ kind: 'Maildir', reference: await maildirCase(dkim, replyAlone(dkim)), flood: await maildirCase(dkim, floodThenReply(dkim)) });
const load = meter.stop();

const on = (r: Run): string => (r.appliedOn === null ? `not within ${MAX_CHECKS}` : `check ${r.appliedOn}`);
const rows = results.flatMap(({ kind, reference, flood }) =>
  [
    [`${kind}: the reply alone (reference)`, reference],
    [`${kind}: ${num(N)} forgeries, then the reply`, flood],
  ].map(([what, r]) => {
    const run = r as Run;
    return [what as string, on(run), ms(run.ms), num(run.headers), num(run.refusedOnHeaders), num(run.whole), bytes(run.bytes), ms(run.stallMs)];
  }),
);
const goals = results.map(({ kind, flood }) => {
  const n = flood.appliedOn;
  return `- ${kind}: the reply applied on the first check (goal), at most the second: ${n === null ? 'not applied' : `check ${n}`} — ${verdict(n === 1)} (first), ${verdict(n !== null && n <= 2)} (at most the second).`;
});
writeSection(
  'flood',
  'Flood: a genuine reply queued behind forged mail',
  [
    `${num(N)} forged tagged mails (the agent's From, a live task's tag and its leaked token, an Authentication-Results saying pass below the border; the provider's own stamp says dmarc=fail) queued before one genuine reply, read by \`Bridge.checkNow()\` with default settings (\`max_headers_per_check = 10000\`, \`max_fetch_per_check = 50\`). Each row is a fresh folder and store; "header blocks" counts those handed to the header stage, "read whole" the messages judged whole. Before header blocks were read first, each check fetched the oldest 50 matching mails whole and judged them in turn: the same flood held the reply back for 100 checks (issue 10). ${describeLoad(load)}`,
    '',
    table(['case', 'reply applied on', 'time of those checks', 'header blocks', 'refused on the header block', 'read whole', 'bytes fetched', 'longest stall'], rows),
    '',
    ...goals,
  ].join('\n'),
);
