/**
 * One process of the SQLite contention test (concurrency.test.ts). Opens the shared store with
 * `Store.open` (WAL, busy timeout) and runs its role's read-then-write transactions; prints one
 * JSON line of counts on stdout, last.
 *
 *   node --import tsx test/integration/faults/store-load.ts <role> <store> <iterations> <index>
 *
 * Two barriers held by the parent over the pipes make the overlap of the processes a fact rather
 * than a timing: the process prints `ready` once its store is open and starts its loop on the
 * line `start` on stdin; it prints `looping` after its first iteration and runs its last iteration
 * only after the line `all-looping` (sent once every process has printed `looping`). So every
 * process runs at least its last iteration while all the others are inside their loops.
 *
 * Roles:
 * - `sweeper`: each iteration stores 5 overdue WORKING tasks (one transaction, like `submit`),
 *   then runs the real `sweepDeadlines` (one `BEGIN IMMEDIATE` read-then-write per candidate);
 * - `poller`: each iteration is the mail check's per-message transaction: read the watermark and
 *   gate 1 (source and raw digest), insert a ledger row with 16 KB of raw bytes, advance the
 *   watermark, record the check — in one `BEGIN IMMEDIATE`;
 * - `poller-deferred`: the same transaction opened DEFERRED on a plain connection (the mistake
 *   https://sqlite.org/lang_transaction.html warns about), as a control that the test can see
 *   SQLITE_BUSY at all.
 */
import { createHash, randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { sweepDeadlines } from '../../../src/core/sweep.js';
import type { BridgeContext } from '../../../src/core/context.js';
import Database from 'better-sqlite3';
import { createInterface } from 'node:readline';
import { Store, type StoreTx } from '../../../src/store/store.js';

const [role = '', path = '', iterationsText = '0', indexText = '0'] = process.argv.slice(2);
const iterations = Number(iterationsText);
const index = Number(indexText);
const FOLDER = 'INBOX';

/** What one process prints (one JSON line on stdout) when it is done. */
export interface Counts {
  role: string;
  index: number;
  /** Read-then-write transactions that committed or ran to their end. */
  tx: number;
  busy: number;
  other: string[];
  /** Tasks this process moved to FAILED (sweeper). */
  failed: number;
  /** Iterations run after the parent said every process is inside its loop (`all-looping`). */
  afterAllLooping: number;
  maxTxMs: number;
}
const counts: Counts = { role, index, tx: 0, busy: 0, other: [], failed: 0, afterAllLooping: 0, maxTxMs: 0 };

/** Lines the parent sent on stdin, each resolved once it arrives. */
const lines = createInterface({ input: process.stdin });
const seen = new Set<string>();
const waiting = new Map<string, () => void>();
lines.on('line', (line) => {
  seen.add(line);
  waiting.get(line)?.();
});
const lineFromParent = (line: string): Promise<void> =>
  seen.has(line) ? Promise.resolve() : new Promise((resolve) => waiting.set(line, resolve));
const allLooping = { yes: false };

/** Around iteration `i` of `n`: signals the first, waits for every process before the last. */
async function barrier(i: number, n: number): Promise<void> {
  if (i === 1) process.stdout.write('looping\n');
  if (i === n - 1) {
    await lineFromParent('all-looping');
    allLooping.yes = true;
  }
  if (allLooping.yes) counts.afterAllLooping++;
}

function record(err: unknown): void {
  const e = err as { code?: string; message?: string };
  if (e?.code?.startsWith('SQLITE_BUSY') || /database is locked/i.test(e?.message ?? '')) counts.busy++;
  else if (counts.other.length < 5) counts.other.push(`${e?.code ?? ''} ${e?.message ?? String(err)}`);
  else counts.other.push('…');
}

/** `store` whose transactions are counted and timed (the sweep's, one per candidate). */
function counting(store: Store): Store {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'tx') return (fn: Parameters<Store['tx']>[0]) => timed(() => target.tx(fn));
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

function timed<T>(fn: () => T): T {
  const t0 = performance.now();
  try {
    const r = fn();
    counts.tx++;
    return r;
  } finally {
    counts.maxTxMs = Math.max(counts.maxTxMs, performance.now() - t0);
  }
}

function seedOverdue(store: Store, n: number): void {
  const now = Date.now();
  store.tx((db) => {
    for (let i = 0; i < n; i++) {
      const id = randomUUID();
      db.tasks.insert({
        id, agent: 'grok', contextId: `load-${index}`, state: 'WORKING', stateReason: 'seeded', failedBy: null, turn: 1,
        caller: 'store-load', createdAt: now - 10_000, updatedAt: now - 10_000, deadlineAt: now - 1000,
      });
      db.turns.insert({
        taskId: id, turn: 1, ask: 'load', replyToken: randomUUID().replaceAll('-', ''), deadlineAt: now - 1000,
        dispatchId: `msg_${randomUUID().replaceAll('-', '')}`, envelope: Buffer.from('{}'), dispatchState: 'accepted',
        nextAttemptAt: null, acceptedAt: now - 9000, replyStatus: null, replyText: null, replyLedgerId: null, repliedAt: null, createdAt: now - 10_000,
      });
    }
  });
}

const raw = Buffer.alloc(16 * 1024, 'x');

function message(uid: number): { source: string; body: Buffer; sha: string } {
  const body = Buffer.concat([Buffer.from(`Message-ID: <${uid}@load>\r\n\r\n`), raw]);
  return { source: `imap:${FOLDER}:1:${uid}`, body, sha: createHash('sha256').update(body).digest('hex') };
}

/** The mail check's per-message transaction for message `uid` (read, then write), through the store. */
function pollerTx(db: StoreTx, uid: number): void {
  const { source, body, sha } = message(uid);
  const state = db.mailbox.state(FOLDER);
  if (db.ledger.isSourceRecorded(source) || db.ledger.hasRawDigest(sha)) return;
  db.ledger.record({
    source, seenAt: Date.now(), messageId: `<${uid}@load>`, fromHeader: 'x@load', subject: 'load', dateHeader: null,
    size: body.length, rawSha256: sha, raw: body, agent: null, taskId: null, verdict: 'no-task-id', reason: `load after ${state.lastUid}`,
  });
  db.mailbox.advance(FOLDER, '1', uid);
  db.mailbox.recordCheck(FOLDER, { at: Date.now(), ok: true, result: `ok, load ${uid}` });
}

/**
 * The control: the same read-then-write opened DEFERRED, on a connection of its own. The store
 * offers no deferred transaction (that is the point), so the control writes its SQL here.
 */
function deferredControlTx(db: Database.Database, uid: number): void {
  const { source, body, sha } = message(uid);
  db.transaction(() => {
    db.prepare(`SELECT last_uid FROM mailbox_state WHERE folder = ?`).get(FOLDER);
    if (db.prepare(`SELECT 1 FROM ledger WHERE source = ? OR raw_sha256 = ?`).get(source, sha)) return;
    db.prepare(
      `INSERT INTO ledger (source, seen_at, message_id, size, raw_sha256, raw, verdict, reason) VALUES (?, ?, ?, ?, ?, ?, 'no-task-id', 'control')`,
    ).run(source, Date.now(), `<${uid}@load>`, body.length, sha, body);
  }).deferred();
}

async function main(): Promise<void> {
  const db = Store.open(path);
  const control = role === 'poller-deferred' ? new Database(path) : null;
  control?.pragma('busy_timeout = 5000');
  process.stdout.write('ready\n');
  await lineFromParent('start');
  if (role === 'sweeper') {
    const ctx = { store: counting(db), now: Date.now, log: pino({ level: 'silent' }) } as unknown as BridgeContext;
    for (let i = 0; i < iterations; i++) {
      await barrier(i, iterations);
      try {
        seedOverdue(db, 5);
      } catch (err) {
        record(err);
      }
      try {
        counts.failed += sweepDeadlines(ctx).length;
      } catch (err) {
        record(err);
      }
    }
    // Whatever is left overdue (the other sweeper may still be seeding) is swept at the end.
    try {
      counts.failed += sweepDeadlines(ctx).length;
    } catch (err) {
      record(err);
    }
  } else if (role === 'poller' || role === 'poller-deferred') {
    for (let i = 0; i < iterations; i++) {
      await barrier(i, iterations);
      const uid = 1 + index + 2 * i; // the two pollers interleave UIDs
      try {
        if (role === 'poller') timed(() => db.tx((tx) => pollerTx(tx, uid)));
        else timed(() => deferredControlTx(control!, uid));
      } catch (err) {
        record(err);
      }
    }
  } else {
    throw new Error(`unknown role ${role}`);
  }
  lines.close();
  db.close();
  control?.close();
  process.stdout.write(`${JSON.stringify(counts)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`store-load ${role}: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
