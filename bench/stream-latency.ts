/**
 * Reply to caller without polling — from a genuine reply's IMAP APPEND being acknowledged by
 * Dovecot to (a) the streamed COMPLETED event reaching a caller subscribed with the official
 * @a2a-js/sdk client (SubscribeToTask), and (b) the push notification POST reaching a loopback
 * receiver — beside the reference measured on the same APPEND in the same run: a plain imapflow
 * client in IMAP IDLE on the same folder noticing the new message (`exists`). The bridge runs with
 * `mailbox.watch = false`: the stream and the push configuration start its watcher on demand.
 * Median over 20 runs (after 2 warm-up runs), every run a new task dispatched through the real
 * path (webhook receiver, private Dovecot, DNS zone serving the DKIM key: the test harness).
 *
 * Run: npx tsx bench/stream-latency.ts   (needs Dovecot: apt-get install -y dovecot-imapd; skips without)
 * Knobs: BENCH_RUNS (default 20)
 */
import { TaskState } from '@a2a-js/sdk';
import { ImapFlow } from 'imapflow';
import { findDovecot, startDovecot } from '../test/helpers/dovecot.js';
import { hermesBody, hex, startHarness } from '../test/helpers/bridge-harness.js';
import { startWebhookReceiver, type RecordedRequest } from '../test/helpers/webhook-receiver.js';
import { describeLoad, startLoadMeter } from './lib/machine.js';
import { writeSection } from './lib/results.js';
import { median, ms, quantile, table, verdict } from './lib/stats.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 20);

try {
  findDovecot();
} catch (err) {
  console.log(`stream-latency: skipped — ${(err as Error).message}`);
  process.exit(0);
}

interface Run {
  idle: number;
  stream: number;
  push: number;
}

const meter = startLoadMeter();
const dovecot = await startDovecot();
const h = await startHarness({ dovecot, mailboxToml: 'check_interval_s = 3600' });
const PUSH_TOKEN = 'bench-push-credential';
const push = await startWebhookReceiver({ path: '/push', bearer: PUSH_TOKEN });
const idle = new ImapFlow({ host: '127.0.0.1', port: dovecot.port, secure: false, auth: { user: dovecot.user, pass: dovecot.password }, logger: false, maxIdleTime: 300_000, autoIdleDelay: 0 });
await idle.connect();
await idle.mailboxOpen('INBOX', { readOnly: true });
let onExists: (() => void) | null = null;
idle.on('exists', () => onExists?.());
// imapflow enters IDLE at once (autoIdleDelay 0) and keeps it running, as the bridge's feed does.
const runs: Run[] = [];
try {
  for (let i = 0; i < RUNS + 2; i++) {
    const contextId = `ctx-${hex(8)}`;
    const ask = hermesBody('Summarise the three strongest 2025 RAG papers.', contextId);
    const sent = await h.rpc({ ...ask, params: { ...ask.params, configuration: { taskPushNotificationConfig: { url: push.url, authentication: { scheme: 'Bearer', credentials: PUSH_TOKEN } } } } });
    const task = sent.json.result!.task!;
    if (task.status.state !== 'TASK_STATE_WORKING') throw new Error(`expected WORKING, got ${task.status.state}`);
    const envelope = h.receiver.requests.map((r) => r.envelope).find((e) => e?.task_id === task.id)!;
    const reply = await h.reply(envelope, { answer: 'Three papers: A, B, C.' });
    const pushesBefore = push.requests.length;

    // The caller subscribes; wait for its first event (the Task) so the stream is open.
    let first!: () => void;
    const opened = new Promise<void>((r) => (first = r));
    let completedAt = 0;
    const streamed = (async () => {
      for await (const e of h.client.resubscribeTask({ tenant: '', id: task.id })) {
        first();
        if (e.payload?.$case === 'statusUpdate' && e.payload.value.status?.state === TaskState.TASK_STATE_COMPLETED) completedAt = performance.now();
      }
    })();
    await opened;
    const noticed = new Promise<number>((r) => (onExists = () => r(performance.now())));

    await dovecot.append(reply);
    const appended = performance.now();
    const appendedWall = Date.now();
    const idleAt = await noticed;
    await streamed;
    // The receiver stamps each arrival with Date.now() (ms): the push figure is on the wall clock.
    let pushed: RecordedRequest | undefined;
    for (let n = pushesBefore + 1; !pushed; ) {
      const got = await push.waitForRequests(n, 30_000);
      pushed = got.find((r) => r.verified && r.body.includes(task.id) && r.body.includes('TASK_STATE_COMPLETED'));
      n = got.length + 1;
    }
    if (completedAt === 0) throw new Error('the stream ended without COMPLETED');
    if (i >= 2) runs.push({ idle: idleAt - appended, stream: completedAt - appended, push: pushed.at - appendedWall });
  }
} finally {
  onExists = null;
  await idle.logout().catch(() => idle.close());
  await push.close();
  await h.close();
  await dovecot.stop();
}
const load = meter.stop();

const row = (name: string, v: number[]): string[] => [name, ms(median(v)), ms(quantile(v, 0.9)), ms(Math.min(...v)), ms(Math.max(...v))];
const stream = runs.map((r) => r.stream);
const pushed = runs.map((r) => r.push);
const body = [
  `From the APPEND of a genuine reply being acknowledged by Dovecot, ${RUNS} runs after 2 warm-up runs, every run a new task with a push configuration (given in SendMessage) and a caller subscribed with the @a2a-js/sdk client (SubscribeToTask) before the APPEND. \`mailbox.watch = false\`: the stream and the push configuration run the watcher (IMAP IDLE) on demand; \`check_interval_s = 3600\`, so nothing but the watcher reads mail. Reference: a plain imapflow client in IDLE on the same folder, its \`exists\` notice of the same APPEND. ${describeLoad(load)}`,
  '',
  table(
    ['from APPEND to', 'median', 'p90', 'min', 'max'],
    [row('reference: a plain IMAP IDLE client notices it', runs.map((r) => r.idle)), row('the streamed COMPLETED event at the SDK caller', stream), row('the push notification POST at a loopback receiver', pushed)],
  ),
  '',
  'Goals:',
  `- Streamed COMPLETED median < 1 s: ${ms(median(stream))} — ${verdict(median(stream) < 1000)}.`,
  `- Push received median < 1 s: ${ms(median(pushed))} — ${verdict(median(pushed) < 1000)}.`,
];
console.log(body.join('\n'));
writeSection('stream-latency', 'Reply to caller without polling: streaming and push', body.join('\n'));
