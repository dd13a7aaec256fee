/**
 * A flood cannot hold back a genuine reply. Forged tagged mails are queued before one genuine reply
 * — each copies a live task's tag, the agent's From, the leaked reply token and an
 * Authentication-Results saying pass among its own headers (below the border); the provider stamps
 * what it saw (dmarc=fail). Two floods: BENCH_FLOOD_N (default 10,000) small forgeries (803-byte
 * header blocks), and BENCH_FLOOD_BIG_N (default 2,000) forgeries of ~200 KiB header blocks (2,000
 * small fields under the sender's From and Subject). Measured: the check on which the reply is
 * applied (goal: the first), the time of the checks up to it, the bytes the mailbox read, the
 * longest event-loop stall; on IMAP (a private Dovecot 2.3, the mail APPENDed in MULTIAPPENDs) and
 * on a Maildir, each beside a reference measured in the same run (the same kind of folder holding
 * the genuine reply alone). Default settings (`max_prefixes_per_check = 25000`,
 * `max_headers_per_check = 10000`, `max_fetch_per_check = 50`), local DKIM verification with an
 * in-process key. "Longest stall": the largest lateness of a 1 ms timer during the checks.
 *
 * Run: npx tsx bench/flood.ts   (IMAP needs Dovecot: apt-get install -y dovecot-imapd; skipped without)
 * Knobs: BENCH_FLOOD_N (default 10000), BENCH_FLOOD_BIG_N (default 2000), BENCH_FLOOD_NO_WRITE=1 (print, do not write RESULTS.md)
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

const N = Number(process.env.BENCH_FLOOD_N ?? 10_000);
const BIG_N = Number(process.env.BENCH_FLOOD_BIG_N ?? 2000);
/** Padding fields of a big forgery: 2,000 of ~100 bytes, a ~200 KiB header block. */
const PADDING = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`X-Pad-${i}`, 'p'.repeat(90)]));
/** Checks tried before giving up on the reply. */
const MAX_CHECKS = 200;

let dovecotFound = true;
try {
  findDovecot();
} catch {
  dovecotFound = false;
}

/**
 * A forgery of a reply to `task`: everything but the agent's signature and an honest provider
 * stamp; `big`: with {@link PADDING} under the sender's other fields (MailComposer writes it first;
 * moved down, so From and Subject stand where a Maildir's narrowing reads them first).
 */
async function forged(task: BenchTask, n: number, big = false): Promise<Buffer> {
  const raw = await buildReplyMail({
    from: `Grok Agent <${AGENT.address}>`,
    to: MAILBOX_ADDRESS,
    subject: `Re: your job [${AGENT.tag}:${task.taskId}]`,
    token: task.token,
    status: 'done',
    answer: `Forged answer ${n}: wire the money to account 4711.`,
    headers: { 'Authentication-Results': `${PROVIDER.authservId}; dkim=pass header.d=${AGENT.domain} header.b=AAAAAAAA; dmarc=pass header.from=${AGENT.domain}` },
    provider: { ...PROVIDER, fromHost: 'mx.evil.example', fromIp: '203.0.113.66', results: `dkim=none; spf=fail smtp.mailfrom=${AGENT.domain}; dmarc=fail (p=reject) header.from=${AGENT.domain}` },
    ...(big ? { headers: { ...PADDING, 'Authentication-Results': `${PROVIDER.authservId}; dkim=pass header.d=${AGENT.domain} header.b=AAAAAAAA; dmarc=pass header.from=${AGENT.domain}` } } : {}),
  });
  if (!big) return raw;
  const end = raw.indexOf('\r\n\r\n');
  const fields = raw.subarray(0, end).toString('latin1').split(/\r\n(?![ \t])/);
  return Buffer.concat([Buffer.from([...fields.filter((f) => !f.startsWith('X-Pad-')), ...fields.filter((f) => f.startsWith('X-Pad-'))].join('\r\n'), 'latin1'), raw.subarray(end)]);
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

const floodThenReply = (dkim: DkimFixture, n: number, big: boolean) => async (task: BenchTask): Promise<Buffer[]> => {
  const flood: Buffer[] = [];
  for (let i = 0; i < n; i++) flood.push(await forged(task, i, big));
  return [...flood, await genuineReply(dkim, task)];
};
const replyAlone = (dkim: DkimFixture) => async (task: BenchTask): Promise<Buffer[]> => [await genuineReply(dkim, task)];

async function imapCase(dkim: DkimFixture, dovecot: DovecotHandle, folder: string, mails: (t: BenchTask) => Promise<Buffer[]>): Promise<Run> {
  await dovecot.createFolder(folder);
  const c = makeConfigDir('');
  try {
    writeFileSync(c.configPath, imapToml({ port: dovecot.port, user: dovecot.user, folder, storePath: join(c.dir, 'state', 'bridge.sqlite') }).replace('check_interval_s = 0', 'check_interval_s = 3600'));
    writeSecret(c.dir, 'imap-password', dovecot.password);
    return await measure(loadConfig(c.configPath), dkim, mails, async (raws) => {
      // In MULTIAPPENDs of at most 64 MiB (one command holds every literal).
      for (let i = 0; i < raws.length; ) {
        const part: Buffer[] = [];
        let bytes = 0;
        while (i < raws.length && (part.length === 0 || bytes + raws[i]!.length <= 64 * 1024 * 1024)) {
          bytes += raws[i]!.length;
          part.push(raws[i++]!);
        }
        await multiAppend(dovecot, folder, part, 600_000);
      }
    });
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
    let at = Date.now() - 3600_000 - (N + BIG_N) * 1000;
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
const floods = [
  { what: `${num(N)} small forgeries (803-byte header blocks), then the reply`, mails: floodThenReply(dkim, N, false) },
  { what: `${num(BIG_N)} forgeries of ~200 KiB header blocks, then the reply`, mails: floodThenReply(dkim, BIG_N, true) },
];
const results: { kind: string; what: string; run: Run }[] = [];
let folderN = 0;
if (dovecotFound) {
  const dovecot = await startDovecot();
  try {
    results.push({ kind: 'IMAP (Dovecot)', what: 'the reply alone (reference)', run: await imapCase(dkim, dovecot, `F${++folderN}`, replyAlone(dkim)) });
    for (const f of floods) results.push({ kind: 'IMAP (Dovecot)', what: f.what, run: await imapCase(dkim, dovecot, `F${++folderN}`, f.mails) });
  } finally {
    await dovecot.stop();
  }
} else {
  console.log('flood: IMAP skipped — Dovecot is not installed');
}
results.push({ kind: 'Maildir', what: 'the reply alone (reference)', run: await maildirCase(dkim, replyAlone(dkim)) });
for (const f of floods) results.push({ kind: 'Maildir', what: f.what, run: await maildirCase(dkim, f.mails) });
const load = meter.stop();

const on = (r: Run): string => (r.appliedOn === null ? `not within ${MAX_CHECKS}` : `check ${r.appliedOn}`);
const rows = results.map(({ kind, what, run }) => [`${kind}: ${what}`, on(run), ms(run.ms), num(run.headers), num(run.refusedOnHeaders), num(run.whole), bytes(run.bytes), ms(run.stallMs)]);
const goals = results
  .filter((r) => !r.what.includes('reference'))
  .map(({ kind, what, run }) => `- ${kind}, ${what}: the reply applied on the first check (goal): ${run.appliedOn === null ? 'not applied' : `check ${run.appliedOn}`} — ${verdict(run.appliedOn === 1)}.`);
const text = [
  `Forged tagged mails (the agent's From, a live task's tag and its leaked token, an Authentication-Results saying pass below the border; the provider's own stamp says dmarc=fail) queued before one genuine reply, read by \`Bridge.checkNow()\` with default settings (\`max_prefixes_per_check = 25000\`, \`max_headers_per_check = 10000\`, \`max_fetch_per_check = 50\`). Each row is a fresh folder and store; "header blocks" counts the candidates handed to the header stage, "read whole" the messages judged whole, "bytes read" what the mailbox read (prefixes, header blocks, whole messages) over the checks up to the reply's. ${describeLoad(load)}`,
  '',
  table(['case', 'reply applied on', 'time of those checks', 'header blocks', 'refused on the header block', 'read whole', 'bytes read', 'longest stall'], rows),
  '',
  ...goals,
  '',
  'Before the stamp step (this benchmark run on main at 68a1ee5 right after, every header block read up to 256 KiB and judged whole, `max_headers_per_check = 10000` counting every candidate; 1.28 of 2 cores used by other processes): the 10,000 small forgeries put the reply on check 2 (IMAP 5,700 ms, Maildir 6,198 ms, 8.4 MiB); the 2,000 forgeries of ~200 KiB header blocks took 16,086 ms (IMAP) and 16,095 ms (Maildir) and 403.9 MiB read; the references 324 ms and 17.2 ms.',
].join('\n');
if (process.env.BENCH_FLOOD_NO_WRITE) console.log(text);
else writeSection('flood', 'Flood: a genuine reply queued behind forged mail', text);
