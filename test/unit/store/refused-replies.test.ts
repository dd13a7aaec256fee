/**
 * The refused mail of a task's turn (store/ledger.ts `refusedRepliesOf`), which every view of a
 * waiting task reads: what a scan of the task's rows says, read by index ranges bounded by the cap
 * whatever the number of rows naming the task (attack review 8: one sorted query over the task's
 * rows took 320-530 ms a view with 1,000,000 forged rows), and bounded by where the turn's mail
 * begins in the ledger, by row id (store/turn-ledger.ts), whatever the clock did.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { whyText } from '../../../src/cli/tasks.js';
import { REFUSED_COUNT_CAP, REFUSED_SQL } from '../../../src/store/ledger.js';
import { MIGRATIONS } from '../../../src/store/migrations.js';
import { Store } from '../../../src/store/store.js';
import { LEDGER_AFTER_SQL } from '../../../src/store/turn-ledger.js';
import type { Verdict } from '../../../src/uplink/verdicts.js';
import { submit } from '../../../src/core/submit.js';
import { registerStoreFunctions } from '../../../src/store/compact.js';
import { AGENT, agentAsks, NOW, send, submitContext } from '../../helpers/submit-context.js';

type Scanned = { count: number; lastVerdict: string; lastSeenAt: number; lastLedgerId: number } | undefined;

/** What the rows say, by a scan: the newest refused row naming the task with an id above `after`, and how many (up to the cap). */
function scanned(store: Store, taskId: string, after: number): Scanned {
  const db = new Database(store.image());
  try {
    const rows = db.prepare(`SELECT id, verdict, seen_at AS seenAt FROM ledger WHERE task_id = ? AND id > ? ORDER BY id`).all(taskId, after) as { id: number; verdict: string; seenAt: number }[];
    const refused = rows.filter((r) => !r.verdict.startsWith('applied:') && r.verdict !== 'late:recorded' && r.verdict !== 'duplicate');
    const last = refused.at(-1);
    return last && { count: Math.min(refused.length, REFUSED_COUNT_CAP), lastVerdict: last.verdict, lastSeenAt: last.seenAt, lastLedgerId: last.id };
  } finally {
    db.close();
  }
}

/** The ledger's highest row id now (0: empty). */
function maxId(store: Store): number {
  const db = new Database(store.image());
  try {
    return (db.prepare(`SELECT coalesce(max(id), 0) AS n FROM ledger`).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/**
 * A bridge context (test/helpers/submit-context.ts) whose clock the test sets — it may step back —
 * and mail recorded as the mail check records it: seen at the clock's time, the ledger numbering
 * rows as they are recorded.
 */
function clockRig() {
  const base = submitContext();
  let clock = NOW;
  const ctx = { ...base, now: () => clock };
  let n = 0;
  return {
    ctx,
    store: base.store,
    set: (at: number): void => void (clock = at),
    /** Records mail tagged with `taskId` the gates gave `verdict`, seen now by the clock; its ledger id. */
    mail: (taskId: string, verdict: Verdict): number =>
      base.store.tx((tx) => tx.ledger.record({ source: `m${++n}`, seenAt: clock, messageId: null, fromHeader: null, subject: null, dateHeader: null, size: 1, rawSha256: `r${n}`, raw: null, agent: 'grok', taskId, verdict, reason: 'r' })!),
  };
}

describe('refused mail of a turn', () => {
  it('agrees with a scan of the rows recorded after each turn began: every verdict but applied, late and duplicate, counted up to the cap, whatever the times', () => {
    const { ctx, store, set, mail } = clockRig();
    const verdicts: Verdict[] = ['auth:no-border', 'applied:working', 'duplicate', 'no-token', 'late:recorded', 'auth:dkim-unaligned', 'unknown-task'];
    const t1 = send(ctx, 'job one');
    const t2 = submit(ctx, AGENT, { messageId: 'm-two', contextId: 'ctx-2', text: 'job two', contentSha256: 'sha-two', caller: 'test' });
    const ids = [t1, t2].map((o) => ('task' in o ? o.task.id : ''));
    expect(new Set(ids).size).toBe(2);
    // The clock wanders back and forth across the turns' starts.
    const times = (i: number): number => NOW + ((i * 7919) % 5000) - 2500;
    const turnsAt: { taskId: string; turn: number; after: number }[] = ids.map((taskId) => ({ taskId, turn: 1, after: 0 }));
    for (let i = 0; i < 2500; i++) {
      set(times(i));
      mail(ids[i % 5 === 0 ? 1 : 0]!, verdicts[i % verdicts.length]!);
      if (i === 1200) {
        // The first task's second turn begins: its mail is what is recorded from here on.
        agentAsks(ctx, ids[0]!, 'which one?');
        const after = maxId(store);
        send(ctx, 'the blue one');
        turnsAt.push({ taskId: ids[0]!, turn: 2, after });
      }
    }
    mail(ids[0]!, 'duplicate');
    mail(ids[0]!, 'applied:done');
    for (const { taskId, turn, after } of turnsAt) expect(store.ledger.refusedRepliesOf(taskId, turn), `${taskId} turn ${turn}`).toEqual(scanned(store, taskId, after));
    expect(store.ledger.refusedRepliesOf(ids[1]!, 2)).toBeUndefined(); // no such turn
  });

  it('with the clock stepping back: mail of the turn seen "before" it began is counted, mail of the turn before is not (tasks WHY)', () => {
    const { ctx, store, set, mail } = clockRig();
    const hour = 3_600_000;
    // The clock steps back an hour after the turn began: the refused reply is still the turn's.
    const a = send(ctx, 'job a');
    const taskA = 'task' in a ? a.task.id : '';
    set(NOW - hour);
    mail(taskA, 'auth:no-border');
    expect(whyText(store, store.tasks.get(taskA)!)).toMatch(/^1 reply refused \(last: auth:no-border\)/);

    // Turn 1 of task b gets a refused reply at NOW, the agent asks; the clock steps back an hour
    // and the caller answers (turn 2); it steps forward again and a refused reply comes: one for turn 2.
    set(NOW);
    const b = send(ctx, 'job b', 'm-b');
    const taskB = 'task' in b ? b.task.id : '';
    mail(taskB, 'auth:no-border');
    agentAsks(ctx, taskB, 'which one?');
    set(NOW - hour);
    send(ctx, 'the blue one', 'm-b2');
    expect(store.tasks.get(taskB)!.turn).toBe(2);
    set(NOW + 60_000);
    const id = mail(taskB, 'auth:dkim-unaligned');
    expect(store.ledger.refusedRepliesOf(taskB, 2)).toEqual({ count: 1, lastVerdict: 'auth:dkim-unaligned', lastSeenAt: NOW + 60_000, lastLedgerId: id });
    expect(whyText(store, store.tasks.get(taskB)!)).toMatch(/^1 reply refused \(last: auth:dkim-unaligned\)/);
  });

  it('a prune that deletes the ledger\'s newest rows (their ids then come again) leaves the turn\'s count right', () => {
    const { ctx, store, set, mail } = clockRig();
    const day = 86_400_000;
    const b = send(ctx, 'job b', 'm-b');
    const taskB = 'task' in b ? b.task.id : '';
    mail(taskB, 'auth:no-border'); // turn 1's
    agentAsks(ctx, taskB, 'which one?');
    for (let i = 0; i < 5; i++) mail('0000', 'unknown-task'); // mail of no task of ours: prunable
    send(ctx, 'the blue one', 'm-b2'); // turn 2 begins
    const before = maxId(store);
    set(NOW + 2 * day);
    expect(store.tx((tx) => tx.retention.prune(NOW + day)).ledger).toBe(5);
    const id = mail(taskB, 'auth:dkim-unaligned'); // turn 2's, with an id the pruned rows had
    expect(id).toBeLessThanOrEqual(before);
    expect(store.ledger.refusedRepliesOf(taskB, 2)).toEqual({ count: 1, lastVerdict: 'auth:dkim-unaligned', lastSeenAt: NOW + 2 * day, lastLedgerId: id });
  });

  it('migration 19 gives a turn written before it the range it was read by before: from the first row seen at or after its start', () => {
    const old = new Database(':memory:');
    registerStoreFunctions(old);
    for (let v = 0; v < 18; v++) old.exec(MIGRATIONS[v]!);
    old.pragma('user_version = 18');
    old.exec(`INSERT INTO tasks (id, agent, context_id, state, turn, created_at, updated_at) VALUES ('t1', 'grok', 'c', 'WORKING', 1, 2000, 2000), ('t2', 'grok', 'c', 'WORKING', 1, 9000, 9000);
      INSERT INTO turns (task_id, turn, ask, deadline_at, dispatch_id, envelope, dispatch_state, created_at)
        VALUES ('t1', 1, 'job', 99999, 'msg_1', x'', 'accepted', 2000), ('t2', 1, 'job', 99999, 'msg_2', x'', 'accepted', 9000);
      INSERT INTO ledger (id, source, seen_at, size, raw_sha256, task_id, verdict, reason) VALUES
        (1, 's1', 1000, 1, 'a', 't1', 'auth:no-border', 'r'), (2, 's2', 2500, 1, 'b', 't1', 'no-token', 'r'), (3, 's3', 3000, 1, 'c', 't1', 'auth:no-border', 'r');`);
    const store = Store.open(old.serialize());
    old.close();
    expect(store.ledger.refusedRepliesOf('t1', 1)).toEqual({ count: 2, lastVerdict: 'auth:no-border', lastSeenAt: 3000, lastLedgerId: 3 });
    expect(store.ledger.refusedRepliesOf('t2', 1)).toBeUndefined(); // nothing naming it
    store.close();
  });

  // Attack review 9: the range began past the ledger's last row; a prune of that junk let the
  // turn's refused replies take lower ids, and they went uncounted.
  it('migration 19 then a prune of the ledger’s newest junk: replies of a turn open across both are counted', () => {
    const old = new Database(':memory:');
    registerStoreFunctions(old);
    for (let v = 0; v < 18; v++) old.exec(MIGRATIONS[v]!);
    old.pragma('user_version = 18');
    old.exec(`INSERT INTO tasks (id, agent, context_id, state, turn, created_at, updated_at) VALUES ('t2', 'grok', 'c', 'WORKING', 1, 9000, 9000);
      INSERT INTO turns (task_id, turn, ask, deadline_at, dispatch_id, envelope, dispatch_state, created_at) VALUES ('t2', 1, 'job', 99999999999, 'msg_2', x'', 'accepted', 9000);
      INSERT INTO ledger (id, source, seen_at, size, raw_sha256, task_id, verdict, reason) VALUES
        (1, 's1', 1000, 1, 'a', NULL, 'no-task-id', 'r'), (2, 's2', 2000, 1, 'b', NULL, 'no-task-id', 'r'), (3, 's3', 3000, 1, 'c', NULL, 'no-task-id', 'r');`);
    const store = Store.open(old.serialize());
    old.close();
    expect(store.tx((tx) => tx.retention.prune(5000)).ledger).toBe(3);
    store.tx((tx) => {
      for (const [i, v] of [[1, 'auth:dmarc-fail'], [2, 'bad-token']] as const) {
        tx.ledger.record({ source: `new${i}`, seenAt: 20000 + i, messageId: null, fromHeader: null, subject: null, dateHeader: null, size: 1, rawSha256: `x${i}`, raw: null, agent: 'grok', taskId: 't2', verdict: v, reason: 'r' });
      }
    });
    expect(store.ledger.refusedRepliesOf('t2', 1)).toMatchObject({ count: 2, lastVerdict: 'bad-token' });
    store.close();
  });

  it('reads by index: each statement a step or a range of an index, never a scan of the task’s rows or a sort', () => {
    const store = Store.open(':memory:');
    const db = new Database(store.image());
    try {
      const plans: Record<string, [string, unknown[]]> = {
        ...Object.fromEntries(Object.entries(REFUSED_SQL).map(([name, sql]) => [name, [sql, name === 'after' ? ['t1', 1] : ['t1', 'auth:no-border', 1]]])),
        ledgerAfter: [`SELECT ${LEDGER_AFTER_SQL} AS after`, [{ taskId: 't1' }]],
      };
      for (const [name, [sql, params]] of Object.entries(plans)) {
        const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((p) => p.detail).join(' | ');
        expect(plan, name).toMatch(name === 'after' ? /SEARCH turns USING INDEX sqlite_autoindex_turns_\d \(task_id=\? AND turn=\?\)/ : /SEARCH ledger USING (COVERING )?INDEX ledger_by_task_verdict/);
        expect(plan, name).not.toMatch(/TEMP B-TREE|SCAN ledger|SCAN turns/);
      }
    } finally {
      db.close();
      store.close();
    }
  });
});
