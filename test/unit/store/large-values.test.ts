import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CHECKPOINT_FROM_BYTES, Checkpointer } from '../../../src/store/checkpointer.js';
import { fileIdentity } from '../../../src/store/file-identity.js';
import { LARGE_VALUE_CHUNK } from '../../../src/store/large-values.js';
import { Store, type StoreTx } from '../../../src/store/store.js';
import { turnCounter } from '../../helpers/event-loop.js';

const AT = Date.parse('2026-06-01T12:00:00Z');
const TASK = '0b7c2f7e-3f8e-4b8a-9a51-0d6b2a8f1c11';
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'mb-large-values-'));
  dirs.push(d);
  return d;
};

/** Counts the store's transactions (each `tx` call that is not nested). */
function countTransactions(store: Store): () => number {
  let n = 0;
  const tx = store.tx.bind(store);
  store.tx = <T>(fn: (t: StoreTx) => T): T => (n++, tx(fn));
  return () => n;
}

function seedTask(tx: StoreTx): void {
  tx.tasks.insert({ id: TASK, agent: 'grok', contextId: 'ctx', state: 'WORKING', stateReason: null, failedBy: null, turn: 1, caller: 'test', createdAt: AT, updatedAt: AT, deadlineAt: AT + 1 });
  tx.turns.insert({
    taskId: TASK, turn: 1, ask: 'job', replyToken: 'a'.repeat(32), deadlineAt: AT + 1, dispatchId: 'msg_1', envelope: Buffer.from('{}'), dispatchState: 'accepted',
    nextAttemptAt: null, acceptedAt: AT, replyStatus: null, replyText: null, replyLedgerId: null, repliedAt: null, createdAt: AT,
  });
}

const record = (tx: StoreTx, source: string, rawValue: number | null, seenAt = AT): number =>
  tx.ledger.record({ source, seenAt, messageId: null, fromHeader: null, subject: null, dateHeader: null, size: 0, rawSha256: source, raw: null, rawValue, agent: 'grok', taskId: TASK, verdict: 'applied:done', reason: 'test' })!;

describe('large values: written in bounded steps before the decision that refers to them', () => {
  it('a raw message: one short transaction per chunk, the event loop turning between them; read back whole by ledger.raw, also from a backup', async () => {
    const dir = tempDir();
    const store = Store.open(join(dir, 's.sqlite'));
    const raw = Buffer.from(Array.from({ length: 4 * LARGE_VALUE_CHUNK + 3 }, (_, i) => (i * 7919) % 256));
    const transactions = countTransactions(store);
    const counter = turnCounter();
    const id = await store.writeLargeValue(raw, AT);
    counter.stop();
    expect(transactions()).toBe(1 + 5); // the value, then 5 chunks
    expect(counter.turns()).toBeGreaterThanOrEqual(5);
    const ledgerId = store.tx((tx) => (seedTask(tx), record(tx, 'memory:1', id)));
    expect(store.ledger.raw(ledgerId)?.equals(raw)).toBe(true);
    expect(store.ledger.row(ledgerId)?.hasRaw).toBe(true);
    expect(store.ledger.latestTaggedWithRaw()?.id).toBe(ledgerId);
    expect(store.largeValues.orphans(Infinity)).toEqual({ count: 0, size: 0 });

    await store.backup(join(dir, 'copy.sqlite'));
    store.close();
    const copy = Store.open(join(dir, 'copy.sqlite'), { readOnly: true });
    expect(copy.ledger.raw(ledgerId)?.equals(raw)).toBe(true);
    copy.close();
  });

  it('an answer: the reply row and the turn read it whole (chunks never split a surrogate pair); the turn keeps no copy', async () => {
    const store = Store.open(':memory:');
    // An astral character (two UTF-16 code units) straddles each chunk boundary.
    const answer = `${'a'.repeat(LARGE_VALUE_CHUNK - 1)}😀${'b'.repeat(LARGE_VALUE_CHUNK - 2)}😀 the end`;
    const id = await store.writeLargeValue(answer, AT);
    store.tx((tx) => {
      seedTask(tx);
      const ledgerId = record(tx, 'memory:2', null);
      tx.replies.insert({ ledgerId, taskId: TASK, turn: 1, agent: 'grok', kind: 'done', nonce: '0123456789abcdef', text: '', textValue: id, omittedLines: 0, createdAt: AT });
      tx.turns.recordReply(TASK, 1, { status: 'done', text: null, ledgerId, at: AT, revokeToken: true });
    });
    expect(store.replies.ofTask(TASK)[0]?.text).toBe(answer);
    expect(store.turns.get(TASK, 1)?.replyText).toBe(answer);
  });

  it('deleting the row that refers to a value deletes the value (prune)', async () => {
    const store = Store.open(':memory:');
    const id = await store.writeLargeValue(Buffer.alloc(LARGE_VALUE_CHUNK * 2, 1), AT);
    store.tx((tx) => record(tx, 'memory:3', id, AT - 100 * 86_400_000));
    expect(store.largeValues.bytes(id)).not.toBeNull();
    expect(store.tx((tx) => tx.retention.prune(AT)).ledger).toBe(1);
    expect(store.largeValues.bytes(id)).toBeNull();
  });

  it('a value no row refers to is an orphan: dropped in bounded steps, or at start if written before it', async () => {
    const store = Store.open(':memory:');
    const dropped = await store.writeLargeValue(Buffer.alloc(LARGE_VALUE_CHUNK * 3, 2), AT);
    await store.dropLargeValue(dropped, LARGE_VALUE_CHUNK * 3);
    expect(store.largeValues.bytes(dropped)).toBeNull();

    const left = await store.writeLargeValue(Buffer.alloc(LARGE_VALUE_CHUNK + 1, 3), AT);
    const fresh = await store.writeLargeValue('x'.repeat(LARGE_VALUE_CHUNK), AT + 10);
    expect(store.largeValues.orphans(AT + 5)).toEqual({ count: 1, size: LARGE_VALUE_CHUNK + 1 });
    expect(store.tx((tx) => tx.largeValues.dropOrphans(AT + 5))).toEqual({ count: 1, size: LARGE_VALUE_CHUNK + 1 });
    expect(store.largeValues.bytes(left)).toBeNull();
    expect(store.largeValues.orphans(Infinity)).toEqual({ count: 1, size: LARGE_VALUE_CHUNK }); // written after the cut: not touched
    expect(fresh).toBeGreaterThan(left);
  });
});

describe('checkpoints off the event loop', () => {
  it('small commits leave the WAL to grow and start no worker; the first commit past 1 MiB of WAL starts it', async () => {
    const store = Store.open(join(tempDir(), 'c.sqlite'));
    store.checkpointOffThread();
    for (let i = 0; i < 20; i++) store.tx((tx) => tx.largeValues.create('bytes', 0, AT + i));
    await store.checkpoint(); // what serve's upkeep asks once a minute
    expect(store.walBytes()).toBeGreaterThan(0);
    expect(store.walBytes()).toBeLessThan(CHECKPOINT_FROM_BYTES);
    expect(store.checkpointWorkerStarted()).toBe(false);
    expect(store.lastCheckpoint()).toBeNull();
    await store.writeLargeValue(Buffer.alloc(5 * LARGE_VALUE_CHUNK, 4), AT); // 1.25 MiB
    expect(store.checkpointWorkerStarted()).toBe(true);
    await store.checkpoint();
    expect(store.lastCheckpoint()).toMatchObject({ type: 'done' });
    const closed = store.closeAndJoin();
    expect(store.checkpointWorkerStarted()).toBe(false);
    await closed;
  });

  // A thread terminated while it loads the SQLite addon aborts the whole process (a test worker
  // died so in CI): close() lets a starting worker open its connection, then asks it to stop.
  it('a worker closed the moment it starts opens its connection, runs the checkpoint asked of it and ends itself: never terminated', async () => {
    const path = join(tempDir(), 'c.sqlite');
    Store.open(path).close();
    const failures: string[] = [];
    const c = new Checkpointer(path, fileIdentity(path)!, () => CHECKPOINT_FROM_BYTES, (m) => failures.push(m));
    c.nudge();
    expect(c.started).toBe(true);
    expect(await c.close()).toEqual({ exitCode: 0, terminated: false });
    expect(c.started).toBe(false);
    expect(failures).toEqual([]); // its own end is not reported as a lost worker
    expect(await c.close()).toBeNull(); // a second close has nothing to stop
  });

  it('no commit of the bridge connection checkpoints; the worker copies the WAL into the file after commits', async () => {
    const store = Store.open(join(tempDir(), 'c.sqlite'));
    expect(store.settings().walAutocheckpoint).toBe(1000); // SQLite's default: a commit past 1,000 pages checkpoints
    store.checkpointOffThread();
    expect(store.settings().walAutocheckpoint).toBe(0);
    await store.writeLargeValue(Buffer.alloc(8 * LARGE_VALUE_CHUNK, 4), AT); // 2 MiB: past 1,000 pages of WAL
    await store.checkpointsIdle();
    const r = await new Promise<{ log: number; checkpointed: number }>((resolve) => {
      // One more commit and its checkpoint: everything committed so far is then in the file.
      store.tx((tx) => tx.largeValues.create('bytes', 0, AT));
      void store.checkpointsIdle().then(() => resolve(store.lastCheckpoint() as { log: number; checkpointed: number }));
    });
    expect(r.log).toBeGreaterThan(0);
    expect(r.checkpointed).toBe(r.log);
    store.close();
  });
});
