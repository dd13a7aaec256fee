import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../../src/store/migrations.js';
import { Store } from '../../../src/store/store.js';
import type { TaskRow } from '../../../src/store/task-rows.js';
import { DAY, IDS, buildStore } from '../../helpers/store-fixture.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');

/** SQLite's own answer to `sql` on a copy of the store (the counts must agree with a scan). */
function scan<T>(store: Store, sql: string, ...params: unknown[]): T[] {
  const db = new Database(store.image());
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

const byState = (store: Store): Record<string, number> =>
  Object.fromEntries(scan<{ state: string; n: number }>(store, 'SELECT state, count(*) AS n FROM tasks GROUP BY state').map((r) => [r.state, r.n]));

function addTasks(store: Store, n: number, o: { agent?: string; prefix?: string; at?: number } = {}): TaskRow[] {
  const out: TaskRow[] = [];
  store.tx((tx) => {
    for (let i = 0; i < n; i++) {
      const at = (o.at ?? NOW) + i * 1000;
      const t: TaskRow = {
        id: `${o.prefix ?? 'aaaa'}${String(i).padStart(4, '0')}-0000-4000-8000-000000000000`,
        agent: o.agent ?? 'grok',
        contextId: `ctx-${i % 3}`,
        state: 'SUBMITTED',
        stateReason: 'stored',
        failedBy: null,
        turn: 1,
        caller: 'test',
        createdAt: at,
        updatedAt: at,
        deadlineAt: at + DAY,
      };
      tx.tasks.insert(t);
      out.push(t);
    }
  });
  return out;
}

describe('counts kept by triggers (migration 11): no scan of a table per call', () => {
  it('tasks by state, dispatches by state and ledger rows by verdict agree with a scan after inserts, moves and prune', () => {
    const store = buildStore(':memory:', NOW);
    const check = (): void => {
      expect(store.stats.tasksByState()).toEqual(byState(store));
      const dispatch = Object.fromEntries(scan<{ s: string; n: number }>(store, 'SELECT dispatch_state AS s, count(*) AS n FROM turns GROUP BY dispatch_state').map((r) => [r.s, r.n]));
      expect(store.stats.dispatchesByState()).toEqual(dispatch);
      const verdicts = Object.fromEntries(scan<{ v: string; n: number }>(store, 'SELECT verdict AS v, count(*) AS n FROM ledger GROUP BY verdict').map((r) => [r.v, r.n]));
      expect(store.stats.ledgerByVerdict()).toEqual(verdicts);
    };
    check();
    const added = addTasks(store, 5, { agent: 'claude' });
    check();
    store.tx((tx) => {
      tx.tasks.transition(added[0]!, 'WORKING', { at: NOW + DAY, cause: 'accepted' });
      tx.tasks.transition(added[1]!, 'CANCELED', { at: NOW + DAY, cause: 'canceled' });
    });
    check();
    expect(store.tx((tx) => tx.retention.prune(NOW + 2 * DAY)).tasks).toBeGreaterThan(0);
    check();
    expect(store.stats.tasksByState().CANCELED).toBeUndefined(); // a state whose count fell to 0 is absent, as before
  });

  it('an older store (version 6) gets its counts from the rows it holds when it is migrated', () => {
    const old = new Database(':memory:');
    for (let v = 0; v < 6; v++) old.exec(MIGRATIONS[v]!);
    old.pragma('user_version = 6');
    old.exec(`INSERT INTO tasks (id, agent, context_id, state, turn, created_at, updated_at) VALUES
      ('t1', 'grok', 'c', 'COMPLETED', 1, 1, 1), ('t2', 'grok', 'c', 'COMPLETED', 1, 1, 2), ('t3', 'claude', 'c', 'WORKING', 1, 1, 3)`);
    const store = Store.open(old.serialize());
    old.close();
    expect(store.stats.tasksByState()).toEqual({ COMPLETED: 2, WORKING: 1 });
    expect(store.tasks.list({ agent: 'grok', limit: 1 }).total).toBe(2);
  });
});

describe('ListTasks totals without a scan per page', () => {
  it('the total matches a scan for every filter, and a later page takes the total the first page counted', () => {
    const store = buildStore(':memory:', NOW);
    addTasks(store, 30);
    const count = (where: string, ...p: unknown[]): number => scan<{ n: number }>(store, `SELECT count(*) AS n FROM tasks WHERE ${where}`, ...p)[0]!.n;
    expect(store.tasks.list({ agent: 'grok', limit: 5 }).total).toBe(count(`agent = 'grok'`));
    expect(store.tasks.list({ agent: 'grok', state: 'SUBMITTED', limit: 5 }).total).toBe(count(`agent = 'grok' AND state = 'SUBMITTED'`));
    expect(store.tasks.list({ agent: 'grok', contextId: 'ctx-1', limit: 5 }).total).toBe(count(`agent = 'grok' AND context_id = 'ctx-1'`));
    expect(store.tasks.list({ agent: 'grok', updatedAfter: NOW + 10_000, limit: 5 }).total).toBe(count(`agent = 'grok' AND updated_at > ?`, NOW + 10_000));
    expect(store.tasks.list({ agent: 'nobody', limit: 5 }).total).toBe(0);
    // A later page of a filtered listing: the carried total is the answer (no count), whatever it is.
    expect(store.tasks.list({ agent: 'grok', updatedAfter: NOW, limit: 5, before: { updatedAt: NOW + 20_000, id: 'z' } }, 12345).total).toBe(12345);
  });
});

describe('the CLI reads by index at any store size', () => {
  it('tasks across several states is the newest first of each, merged, exactly as one sorted scan', () => {
    const store = buildStore(':memory:', NOW);
    const added = addTasks(store, 12);
    store.tx((tx) => {
      added.slice(0, 4).forEach((t, i) => tx.tasks.transition(t, 'CANCELED', { at: NOW + 100_000 + i, cause: 'canceled' }));
      added.slice(4, 6).forEach((t, i) => tx.tasks.transition(t, 'WORKING', { at: NOW + 100_000 + i, cause: 'accepted' }));
    });
    for (const states of [['CANCELED', 'SUBMITTED'], ['WORKING', 'CANCELED', 'COMPLETED', 'FAILED'], ['SUBMITTED']] as const) {
      const want = scan<{ id: string }>(store, `SELECT id FROM tasks WHERE state IN (${states.map(() => '?').join(',')}) ORDER BY updated_at DESC, id DESC LIMIT 7`, ...states).map((r) => r.id);
      expect(store.tasks.rows({ states: [...states], limit: 7 }).map((t) => t.id)).toEqual(want);
      expect(store.tasks.rows({ states: [...states], agent: 'grok', limit: 7 }).map((t) => t.id)).toEqual(
        scan<{ id: string }>(store, `SELECT id FROM tasks WHERE agent = 'grok' AND state IN (${states.map(() => '?').join(',')}) ORDER BY updated_at DESC, id DESC LIMIT 7`, ...states).map((r) => r.id),
      );
    }
    expect(store.tasks.rows({ states: [], limit: 7 })).toEqual([]);
  });

  it('a task id prefix is a range of the key: every id that starts with it, and no other', () => {
    const store = buildStore(':memory:', NOW);
    addTasks(store, 3, { prefix: 'abcd' });
    addTasks(store, 2, { prefix: 'abce' });
    expect(store.tasks.idsWithPrefix('abcd', 10)).toHaveLength(3);
    expect(store.tasks.idsWithPrefix('abc', 10)).toHaveLength(5);
    expect(store.tasks.idsWithPrefix('abcd0001', 10)).toEqual(['abcd0001-0000-4000-8000-000000000000']);
    expect(store.tasks.idsWithPrefix('abcf', 10)).toEqual([]);
    expect(store.tasks.idsWithPrefix(IDS.oldCompleted.slice(0, 8), 10)).toEqual([IDS.oldCompleted]);
    expect(store.ledger.taskIdsWithPrefix(IDS.oldCompleted.slice(0, 6), true, 10)).toEqual([IDS.oldCompleted]);
  });
});

describe('bytes per task: an ended task keeps no signed envelope it can never send again', () => {
  it('COMPLETED and FAILED by the agent empty the turn envelope; FAILED by dispatch (retry) and CANCELED (the notice) keep it', () => {
    const store = buildStore(':memory:', NOW);
    const [done, failed, byDispatch, canceled] = addTasks(store, 4, { prefix: 'eeee' });
    store.tx((tx) => {
      for (const [i, t] of [done!, failed!, byDispatch!, canceled!].entries()) {
        tx.turns.insert({ taskId: t.id, turn: 1, ask: 'job', replyToken: 'f'.repeat(32), deadlineAt: NOW + DAY, dispatchId: `msg_e${i}`, envelope: Buffer.from('{"v":1}'), dispatchState: 'pending', nextAttemptAt: NOW, acceptedAt: null, replyStatus: null, replyText: null, replyLedgerId: null, repliedAt: null, createdAt: NOW });
      }
      tx.tasks.transition(done!, 'COMPLETED', { at: NOW + 1, cause: 'done' });
      tx.tasks.transition(failed!, 'FAILED', { at: NOW + 1, cause: 'the agent failed', failedBy: 'agent' });
      tx.tasks.transition(byDispatch!, 'FAILED', { at: NOW + 1, cause: 'refused', failedBy: 'dispatch' });
      tx.tasks.transition(canceled!, 'CANCELED', { at: NOW + 1, cause: 'canceled' });
    });
    const envelopeOf = (t: TaskRow | undefined): string => store.turns.get(t!.id, 1)!.envelope.toString('utf8');
    expect([envelopeOf(done), envelopeOf(failed), envelopeOf(byDispatch), envelopeOf(canceled)]).toEqual(['', '', '{"v":1}', '{"v":1}']);
  });
});

describe('bytes per task: a reply text stored once', () => {
  it('a turn whose reply has its row keeps no copy of the text, and reads give it back from the reply row; a reply without a row keeps it on the turn', () => {
    const store = buildStore(':memory:', NOW);
    const [withRow, without] = addTasks(store, 2, { prefix: 'ffff' });
    store.tx((tx) => {
      for (const [i, t] of [withRow!, without!].entries()) {
        tx.turns.insert({ taskId: t.id, turn: 1, ask: 'job', replyToken: null, deadlineAt: NOW + DAY, dispatchId: `msg_f${i}`, envelope: Buffer.from('{}'), dispatchState: 'accepted', nextAttemptAt: null, acceptedAt: NOW, replyStatus: null, replyText: null, replyLedgerId: null, repliedAt: null, createdAt: NOW });
      }
      tx.replies.insert({ ledgerId: 901, taskId: withRow!.id, turn: 1, agent: 'grok', kind: 'input-required', nonce: '0123456789abcdef', text: 'the question, once', omittedLines: 0, createdAt: NOW });
      tx.turns.recordReply(withRow!.id, 1, { status: 'input-required', text: 'the question, once', ledgerId: 901, at: NOW, revokeToken: true });
      tx.turns.recordReply(without!.id, 1, { status: 'input-required', text: 'an older reply', ledgerId: 902, at: NOW, revokeToken: true });
    });
    const stored = scan<{ id: string; text: string | null }>(store, `SELECT task_id AS id, reply_text AS text FROM turns WHERE task_id IN (?, ?) ORDER BY task_id`, withRow!.id, without!.id);
    expect(Object.fromEntries(stored.map((r) => [r.id, r.text]))).toEqual({ [withRow!.id]: null, [without!.id]: 'an older reply' });
    expect(store.turns.get(withRow!.id, 1)!.replyText).toBe('the question, once');
    expect(store.turns.status(withRow!.id, 1)!.replyText).toBe('the question, once');
    expect(store.turns.ofTask(without!.id)[0]!.replyText).toBe('an older reply');
  });

  it('migration 12 drops the copy an older store kept on the turn', () => {
    const old = new Database(':memory:');
    for (let v = 0; v < 8; v++) old.exec(MIGRATIONS[v]!);
    old.pragma('user_version = 8');
    old.exec(`INSERT INTO tasks (id, agent, context_id, state, turn, created_at, updated_at) VALUES ('t1', 'grok', 'c', 'INPUT_REQUIRED', 1, 1, 1);
      INSERT INTO turns (task_id, turn, ask, deadline_at, dispatch_id, envelope, dispatch_state, reply_status, reply_text, reply_ledger_id, replied_at, created_at)
        VALUES ('t1', 1, 'job', 9, 'msg_1', x'', 'accepted', 'input-required', 'twice', 7, 2, 1);
      INSERT INTO replies (ledger_id, task_id, turn, agent, kind, nonce, text, omitted_lines, created_at) VALUES (7, 't1', 1, 'grok', 'input-required', '0123456789abcdef', 'twice', 0, 2);`);
    const store = Store.open(old.serialize());
    old.close();
    expect(scan<{ text: string | null }>(store, `SELECT reply_text AS text FROM turns`)).toEqual([{ text: null }]);
    expect(store.turns.get('t1', 1)!.replyText).toBe('twice');
  });
});
