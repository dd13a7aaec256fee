/**
 * One request-driven mailbox check (`Bridge.checkNow()`) on the IMAP session serve keeps between
 * checks (src/uplink/imap-mailbox.ts `keepSession`: STATUS; when something came, EXAMINE, one
 * narrowed UID SEARCH after the watermark, the header blocks, FETCH BODY.PEEK of what passed them,
 * the gate stack with local DKIM verification, one ledger transaction per message, CLOSE) — and,
 * as the reference, the check on a new connection (connect, log in, EXAMINE…, LOGOUT: every
 * RECONNECT_EVERY_MS, after an error, and every check before) — against a private Dovecot 2.3 holding
 * 1,000, 10,000 and 100,000 messages in the folder — with nothing new, and with 10 new genuine
 * replies. Time per check, message bytes fetched per check, and where the IMAP time goes; the cost
 * must not grow with the folder.
 *
 * Populating: each folder size gets a Dovecot of its own (test/helpers/dovecot.ts: Maildir, no
 * other folder or activity to disturb it). The messages are written straight into the user's
 * Maildir before Dovecot first opens the folder (bench/lib/maildir-fill.ts); the first open, which
 * builds Dovecot's index, is timed and shown apart. The watermark is set to the folder's highest
 * UID, as after months of use. The 10 new replies are APPENDed over IMAP (bytes kept exact) for
 * tasks written into the store beforehand.
 *
 * Run: npx tsx bench/mailbox-check.ts   (needs Dovecot: apt-get install -y dovecot-imapd; skips without)
 * Knobs: BENCH_SIZES (default 1000,10000,100000), BENCH_REPS (checks with nothing new, default 20).
 */
import { ImapFlow } from 'imapflow';
import { mkdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { startApp } from '../src/app.js';
import { loadConfig } from '../src/config/config.js';
import { createLogger } from '../src/log.js';
import { Store } from '../src/store/store.js';
import { ImapMailbox } from '../src/uplink/imap-mailbox.js';
import { makeConfigDir, writeSecret } from '../test/helpers/config-dir.js';
import { findDovecot, startDovecot, type DovecotHandle } from '../test/helpers/dovecot.js';
import { ImapTrace } from './lib/imap-trace.js';
import { dkimFixture, genuineReply, imapToml, insertWorkingTasks, type DkimFixture } from './lib/mail-fixture.js';
import { fillFolder, giveToMailUser } from './lib/maildir-fill.js';
import { MeteredMailbox } from './lib/metered-mailbox.js';
import { describeLoad, startLoadMeter } from './lib/machine.js';
import { writeSection } from './lib/results.js';
import { bytes, median, ms, num, quantile, ratio, table, verdict } from './lib/stats.js';

const SIZES = (process.env.BENCH_SIZES ?? '1000,10000,100000').split(',').map(Number);
const REPS = Number(process.env.BENCH_REPS ?? 20);
const NEW_REPS = 5;
const NEW_REPLIES = 10;
const SETTLE_MS = 3000;
const FOLDER = 'Agents';

try {
  findDovecot();
} catch (err) {
  console.log(`mailbox-check: skipped — ${(err as Error).message}`);
  process.exit(0);
}

interface Sample {
  total: number;
  imap: number;
  bytes: number;
  /** IMAP time per command verb. */
  verbs: Map<string, number>;
}

interface SizeResult {
  size: number;
  diskBytes: number;
  fillMs: number;
  firstOpenMs: number;
  idle: Sample[];
  /** Nothing new, each check on a new connection (the kept session ended before it). */
  reconnect: Sample[];
  /** Checked right after the APPENDs (what the watcher does, or a poll that comes at once). */
  fresh: Sample[];
  /** Checked SETTLE_MS after the APPENDs. */
  settled: Sample[];
}

async function withImap<T>(d: DovecotHandle, fn: (c: ImapFlow) => Promise<T>): Promise<T> {
  const c = new ImapFlow({ host: d.host, port: d.port, secure: false, doSTARTTLS: false, auth: { user: d.user, pass: d.password }, logger: false, disableAutoIdle: true, socketTimeout: 600_000 });
  c.on('error', () => {});
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.logout().catch(() => c.close());
  }
}

async function measureSize(n: number, dkim: DkimFixture): Promise<SizeResult> {
  const dovecot = await startDovecot();
  const configDir = makeConfigDir('');
  let app: Awaited<ReturnType<typeof startApp>> | undefined;
  try {
    const filled = performance.now();
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(dovecot.maildir, sub), { recursive: true }); // INBOX
    const diskBytes = fillFolder(dovecot.maildir, FOLDER, n);
    giveToMailUser(dovecot.maildir);
    // A folder nobody has changed for an hour: Dovecot rescans a Maildir whose directories
    // changed in the last seconds (see the note under the table), which a fresh fill would trip.
    const anHourAgo = new Date(Date.now() - 3600_000);
    for (const sub of ['', 'cur', 'new', 'tmp']) utimesSync(join(dovecot.maildir, `.${FOLDER}`, sub), anHourAgo, anHourAgo);
    const fillMs = performance.now() - filled;

    // The first open: Dovecot scans the folder and builds its index.
    const opened = performance.now();
    const box = await withImap(dovecot, (c) => c.mailboxOpen(FOLDER, { readOnly: true }));
    const firstOpenMs = performance.now() - opened;
    if (box.exists !== n) throw new Error(`Dovecot sees ${box.exists} messages in ${FOLDER}, expected ${n}`);

    const storePath = join(configDir.dir, 'state', 'bridge.sqlite');
    writeFileSync(configDir.configPath, imapToml({ port: dovecot.port, user: dovecot.user, folder: FOLDER, storePath }));
    writeSecret(configDir.dir, 'imap-password', dovecot.password);
    const config = loadConfig(configDir.configPath);
    // The watermark of a bridge that has read this folder before.
    const db0 = Store.open(storePath);
    db0.tx((tx) => tx.mailbox.advance(FOLDER, box.uidValidity.toString(10), box.uidNext - 1));
    db0.close();

    const trace = new ImapTrace();
    // As serve opens it (src/app.ts openMailbox): the session kept between checks.
    const mailbox = new MeteredMailbox(new ImapMailbox({ ...config.mailbox.imap!, folder: FOLDER }, trace.logger, { keepSession: true }));
    app = await startApp(config, { log: createLogger('info', pino.destination('/dev/null')), mailbox, dkimResolver: dkim.resolver });
    await app.bridge.idle();
    const bridge = app.bridge;

    const once = async (expectApplied: number): Promise<Sample> => {
      trace.reset();
      const t = performance.now();
      const s = await bridge.checkNow();
      const total = performance.now() - t;
      const applied = s.verdicts['applied:done'] ?? 0;
      if (!s.ok || applied !== expectApplied || s.fetched !== expectApplied) {
        throw new Error(`${num(n)} messages: check ${s.ok ? 'ok' : `failed (${s.error})`}, fetched ${s.fetched}, verdicts ${JSON.stringify(s.verdicts)}; expected ${expectApplied} applied`);
      }
      return { total, imap: mailbox.last.ms, bytes: mailbox.last.bytesFetched, verbs: trace.spent };
    };
    for (let i = 0; i < 3; i++) await once(0);
    const idle: Sample[] = [];
    for (let i = 0; i < REPS; i++) idle.push(await once(0));
    const reconnect: Sample[] = [];
    for (let i = 0; i < REPS; i++) {
      await mailbox.close(); // ends the kept session: the check connects afresh
      reconnect.push(await once(0));
    }
    const arrive = async (): Promise<void> => {
      const tasks = insertWorkingTasks(bridge.ctx.store, NEW_REPLIES);
      const mails = await Promise.all(tasks.map((t) => genuineReply(dkim, t)));
      await withImap(dovecot, async (c) => {
        for (const m of mails) await c.append(FOLDER, m, []);
      });
    };
    const fresh: Sample[] = [];
    const settled: Sample[] = [];
    for (let i = 0; i < NEW_REPS; i++) {
      await arrive();
      fresh.push(await once(NEW_REPLIES));
      await arrive();
      await new Promise((r) => setTimeout(r, SETTLE_MS));
      settled.push(await once(NEW_REPLIES));
    }
    const r = { size: n, diskBytes, fillMs, firstOpenMs, idle, reconnect, fresh, settled };
    process.stdout.write(`${num(n)} messages: filled in ${ms(fillMs)}, first open ${ms(firstOpenMs)}, check with nothing new ${ms(median(idle.map((s) => s.total)))}, with ${NEW_REPLIES} new ${ms(median(fresh.map((s) => s.total)))}\n`);
    return r;
  } finally {
    await app?.close();
    await dovecot.stop();
    rmSync(configDir.dir, { recursive: true, force: true });
  }
}

const meter = startLoadMeter();
const dkim = dkimFixture();
const results: SizeResult[] = [];
for (const n of SIZES) results.push(await measureSize(n, dkim));
const load = meter.stop();

const med = (xs: Sample[], k: 'total' | 'imap' | 'bytes'): number => median(xs.map((s) => s[k]));
const verb = (xs: Sample[], ...names: string[]): number => median(xs.map((s) => names.reduce((a, v) => a + (s.verbs.get(v) ?? 0), 0)));
const first = results[0]!;
const last = results.at(-1)!;
const idleRatio = med(last.idle, 'total') / med(first.idle, 'total');
const freshRatio = med(last.fresh, 'total') / med(first.fresh, 'total');
const cases = (r: SizeResult): [string, Sample[]][] => [
  ['nothing new', r.idle],
  ['nothing new, on a new connection (reference)', r.reconnect],
  [`${NEW_REPLIES} new, checked at once`, r.fresh],
  [`${NEW_REPLIES} new, checked ${SETTLE_MS / 1000} s later`, r.settled],
];
const body = [
  `One \`Bridge.checkNow()\` per measurement (the check a poll runs when one is due), timed whole and for its IMAP pass alone (\`ImapMailbox.check\` on the kept session: STATUS, then EXAMINE, UID SEARCH, FETCH and CLOSE only when something came; on a new connection: connect, log in, LIST, EXAMINE, UID SEARCH, FETCH, LOGOUT); bytes are the message bytes fetched (\`CheckResult.bytesFetched\`); the IMAP command times come from imapflow's command log ("login" is ID, AUTHENTICATE, ID, NAMESPACE; "LIST" the LIST and LSUB imapflow sends before EXAMINE). A private Dovecot per folder size (Maildir, loopback, test/helpers/dovecot.ts), filled by writing Maildir files straight into the user's Maildir before Dovecot's first open (≈${bytes(first.diskBytes / first.size)} per message; every 20th an earlier tagged reply from the agent, the rest other mail; directory times set an hour back, as for a folder nobody changed lately); watermark at the folder's highest UID. "Nothing new": median of ${REPS} checks after 3 warm-up checks. "${NEW_REPLIES} new": median of ${NEW_REPS} checks, each after APPENDing ${NEW_REPLIES} genuine replies (DKIM RSA-2048, verified locally; key from an in-process resolver) to open tasks, checked at once or ${SETTLE_MS / 1000} s later; all ${NEW_REPLIES} applied every time. ${describeLoad(load)}`,
  '',
  table(
    ['messages in folder', 'case', 'check (p90)', 'IMAP part', 'bytes fetched', 'connect, greeting, LOGOUT', 'login', 'LIST', 'STATUS', 'EXAMINE', 'UID SEARCH', 'UID FETCH', 'CLOSE'],
    results.flatMap((r) =>
      cases(r).map(([label, xs]) => [
        num(r.size),
        label,
        `${ms(med(xs, 'total'))} (${ms(quantile(xs.map((s) => s.total), 0.9))})`,
        ms(med(xs, 'imap')),
        bytes(med(xs, 'bytes')),
        ms(median(xs.map((x) => x.imap - [...x.verbs].filter(([v]) => v !== 'LOGOUT').reduce((a, [, t]) => a + t, 0)))),
        ms(verb(xs, 'ID', 'AUTHENTICATE', 'LOGIN', 'NAMESPACE', 'CAPABILITY')),
        ms(verb(xs, 'LIST', 'LSUB')),
        ms(verb(xs, 'STATUS')),
        ms(verb(xs, 'EXAMINE')),
        ms(verb(xs, 'UID SEARCH')),
        ms(verb(xs, 'UID FETCH')),
        ms(verb(xs, 'CLOSE')),
      ]),
    ),
  ),
  '',
  `Filling and first open: ${results.map((r) => `${num(r.size)} messages, ${bytes(r.diskBytes)} written in ${ms(r.fillMs)}, first open (Dovecot builds its index) ${ms(r.firstOpenMs)}`).join('; ')}.`,
  '',
  `Ratio ${num(last.size)}/${num(first.size)}: nothing new ${ratio(med(last.idle, 'total'), med(first.idle, 'total'))} (on a new connection: ${ratio(med(last.reconnect, 'total'), med(first.reconnect, 'total'))}); ${NEW_REPLIES} new checked at once ${ratio(med(last.fresh, 'total'), med(first.fresh, 'total'))}, ${SETTLE_MS / 1000} s later ${ratio(med(last.settled, 'total'), med(first.settled, 'total'))}. The bytes fetched are the same at every size, and so are STATUS, SEARCH and FETCH: what grows is EXAMINE, i.e. Dovecot opening the folder, which the kept session pays only when something came.`,
  '',
  'Goals:',
  `- Check with nothing new < 50 ms at ${num(last.size)} messages: ${ms(med(last.idle, 'total'))} — ${verdict(med(last.idle, 'total') < 50)}.`,
  `- Within 1.5× of the ${num(first.size)}-message figure: ${idleRatio.toFixed(2)}× — ${verdict(idleRatio <= 1.5)} (with ${NEW_REPLIES} new, checked at once: ${freshRatio.toFixed(2)}×; on a new connection, once per RECONNECT_EVERY_MS or after an error: ${(med(last.reconnect, 'total') / med(first.reconnect, 'total')).toFixed(2)}×).`,
];
writeSection('mailbox-check', 'Mailbox check against Dovecot: cost by folder size', body.join('\n'));
