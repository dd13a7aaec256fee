import { describe, expect, it } from 'vitest';
import { canMoveDispatch, DISPATCH_STATES, IllegalDispatchMoveError } from '../../../src/store/dispatch-state.js';
import { AUDIT_MESSAGE_ID_CHARS, AUDIT_VERDICTS } from '../../../src/store/audit.js';
import { StoreError, Store } from '../../../src/store/store.js';
import { canTransition, IllegalTransitionError, TASK_STATES, TERMINAL_STATES } from '../../../src/store/task-state.js';
import type { TaskRow } from '../../../src/store/task-rows.js';
import type { TurnRow } from '../../../src/store/turns.js';

function task(over: Partial<TaskRow> = {}): TaskRow {
  return {
    id: 't1', agent: 'grok', contextId: 'ctx', state: 'SUBMITTED', stateReason: null, failedBy: null, turn: 1,
    caller: 'test', createdAt: 1000, updatedAt: 1000, deadlineAt: 5000, ...over,
  };
}

function turn(over: Partial<TurnRow> = {}): TurnRow {
  return {
    taskId: 't1', turn: 1, ask: 'job', replyToken: 'a'.repeat(32), deadlineAt: 5000, dispatchId: 'msg_1', envelope: Buffer.from('{}'),
    dispatchState: 'pending', nextAttemptAt: 1000, acceptedAt: null, replyStatus: null, replyText: null, replyLedgerId: null, repliedAt: null, createdAt: 1000, ...over,
  };
}

describe('task state machine', () => {
  it('terminal states are sticky for every unnamed move', () => {
    for (const from of TERMINAL_STATES) for (const to of TASK_STATES) expect(canTransition(from, to)).toBe(false);
  });

  it('records every move with its cause and writes the audit entry exactly once, at the terminal move', () => {
    const db = Store.open(':memory:');
    db.tx((tx) => tx.tasks.insert(task()));
    let t = db.tasks.get('t1')!;
    t = db.tx((tx) => tx.tasks.transition(t, 'WORKING', { at: 2000, cause: 'webhook accepted (HTTP 202)' }));
    expect(db.audit.latest('t1')).toBeUndefined();
    t = db.tx((tx) => tx.tasks.transition(t, 'FAILED', { at: 6000, cause: 'deadline passed', failedBy: 'deadline' }));
    expect(db.tasks.get('t1')).toMatchObject({ state: 'FAILED', failedBy: 'deadline', stateReason: 'deadline passed', updatedAt: 6000 });
    expect(db.events.of('t1').map((e) => `${e.fromState}>${e.toState}`)).toEqual(['null>SUBMITTED', 'SUBMITTED>WORKING', 'WORKING>FAILED']);
    expect(db.audit.latest('t1')).toMatchObject({ task: 't1', state: 'FAILED', cause: 'deadline passed', failedBy: 'deadline' });
    expect(() => db.tx((tx) => tx.tasks.transition(t, 'COMPLETED', { at: 7000, cause: 'late' }))).toThrow(IllegalTransitionError);
    expect(db.stats.rowCounts().audit).toBe(1);
  });

  it('an audit entry lists the verdicts show lists, counts the rest and cuts long Message-IDs: forged mail tagged with the task cannot grow it (attack review 8)', () => {
    const db = Store.open(':memory:');
    db.tx((tx) => {
      tx.tasks.insert(task());
      tx.turns.insert(turn());
    });
    const row = (i: number, verdict: 'applied:working' | 'auth:no-border', messageId: string) =>
      ({ source: `maildir:/m:f${i}`, seenAt: 2000 + i, messageId, fromHeader: 'agent@agent.example', subject: '[GROK:t1]', dateHeader: null, size: 16_000, rawSha256: String(i).padStart(64, '0'), raw: null, agent: 'grok', taskId: 't1', verdict, reason: 'r' }) as const;
    const forged = 1000;
    db.tx((tx) => {
      tx.ledger.record(row(0, 'applied:working', '<note@agent.example>'));
      for (let i = 1; i <= forged; i++) tx.ledger.record(row(i, 'auth:no-border', `<${i}${'a'.repeat(15_000)}@forger.test>`));
    });
    db.tx((tx) => tx.tasks.transition(db.tasks.get('t1')!, 'CANCELED', { at: 9000, cause: 'canceled by the caller' }));
    const entry = db.audit.latest('t1')! as { verdicts: { id: number; messageId: string; verdict: string }[]; verdictsLeftOut: number; verdictCounts: Record<string, number> };
    expect(entry.verdicts).toHaveLength(AUDIT_VERDICTS.newest + 1);
    expect(entry.verdicts[0]).toMatchObject({ id: 1, messageId: '<note@agent.example>', verdict: 'applied:working' });
    expect(entry.verdictsLeftOut).toBe(forged - AUDIT_VERDICTS.newest);
    expect(entry.verdictCounts).toEqual({ 'applied:working': 1, 'auth:no-border': forged });
    expect(Math.max(...entry.verdicts.map((v) => v.messageId.length))).toBe(AUDIT_MESSAGE_ID_CHARS + 1);
    expect(JSON.stringify(entry).length).toBeLessThan(100_000);
  });

  it('REJECTED (A2A v1.0 §4.1.3: the agent declines) is reached from the states where the agent holds the turn, never from INPUT_REQUIRED; its arrival is audited once', () => {
    expect(TASK_STATES.filter((from) => canTransition(from, 'REJECTED'))).toEqual(['SUBMITTED', 'WORKING']);
    const db = Store.open(':memory:');
    db.tx((tx) => {
      tx.tasks.insert(task());
      tx.turns.insert(turn());
    });
    let t = db.tx((tx) => tx.tasks.transition(db.tasks.get('t1')!, 'WORKING', { at: 2000, cause: 'webhook accepted (HTTP 202)' }));
    t = db.tx((tx) => tx.tasks.transition(t, 'REJECTED', { at: 3000, cause: 'the agent declined the task in reply (ledger #1)', deadlineAt: null }));
    expect(db.tasks.get('t1')).toMatchObject({ state: 'REJECTED', failedBy: null, deadlineAt: null });
    expect(db.audit.of('t1').map((a) => [a.state, a.entry.cause])).toEqual([['REJECTED', 'the agent declined the task in reply (ledger #1)']]);
    // Its webhook is never sent again: the signed bytes go, as for COMPLETED.
    expect(db.turns.get('t1', 1)!.envelope.length).toBe(0);
    for (const to of TASK_STATES) expect(() => db.tx((tx) => tx.tasks.transition(t, to, { at: 4000, cause: 'x' }))).toThrow(IllegalTransitionError);
    expect(() => db.tx((tx) => tx.tasks.transition(task({ state: 'INPUT_REQUIRED' }), 'REJECTED', { at: 4000, cause: 'x' }))).toThrow(IllegalTransitionError);
  });

  it('keeps status timestamps strictly increasing even within one millisecond', () => {
    const db = Store.open(':memory:');
    db.tx((tx) => tx.tasks.insert(task()));
    const t = db.tx((tx) => tx.tasks.transition(db.tasks.get('t1')!, 'WORKING', { at: 1000, cause: 'x' }));
    expect(t.updatedAt).toBe(1001);
  });

  it('writes only inside store.tx(), and rolls every write of a failed transaction back', () => {
    const db = Store.open(':memory:');
    let stashed: Parameters<Parameters<Store['tx']>[0]>[0] | undefined;
    db.tx((tx) => {
      stashed = tx;
      tx.tasks.insert(task());
    });
    expect(() => stashed!.tasks.insert(task({ id: 't2' }))).toThrow(StoreError);
    expect(() =>
      db.tx((tx) => {
        tx.tasks.transition(tx.tasks.get('t1')!, 'WORKING', { at: 2000, cause: 'x' });
        tx.tasks.transition(tx.tasks.get('t1')!, 'SUBMITTED', { at: 2001, cause: 'not allowed' });
      }),
    ).toThrow(IllegalTransitionError);
    expect(db.tasks.get('t1')?.state).toBe('SUBMITTED');
  });

  it('hands each committed change to the listeners after the commit, and none of a rolled-back one', () => {
    const db = Store.open(':memory:');
    const seen: string[] = [];
    db.onTaskChange((c) => seen.push(`${c.previous}>${c.task.state}: ${c.cause}`));
    db.tx((tx) => {
      tx.tasks.insert(task({ stateReason: 'stored' }));
      expect(seen).toEqual([]); // nothing inside the transaction
    });
    expect(() =>
      db.tx((tx) => {
        tx.tasks.transition(tx.tasks.get('t1')!, 'WORKING', { at: 2000, cause: 'accepted' });
        throw new Error('rolled back');
      }),
    ).toThrow('rolled back');
    db.tx((tx) => tx.tasks.note(tx.tasks.get('t1')!, 2500, 'a note'));
    expect(seen).toEqual(['null>SUBMITTED: stored', 'SUBMITTED>SUBMITTED: a note']);
  });

  it('the schema holds the states (CHECK constraints)', () => {
    const db = Store.open(':memory:');
    expect(() => db.tx((tx) => tx.tasks.insert(task({ state: 'DONE' as never })))).toThrow(/CHECK constraint failed/);
    expect(() => db.tx((tx) => tx.tasks.insert(task({ failedBy: 'deadline' })))).toThrow(/CHECK constraint failed/);
    db.tx((tx) => tx.tasks.insert(task()));
    expect(() => db.tx((tx) => tx.turns.insert(turn({ dispatchState: 'sent' as never })))).toThrow(/CHECK constraint failed/);
  });
});

describe('the operator retry: a guarded edge out of FAILED', () => {
  it('reopens only a task that failed by dispatch, and a second terminal arrival writes a second audit entry', () => {
    const db = Store.open(':memory:');
    db.tx((tx) => tx.tasks.insert(task()));
    let t = db.tx((tx) => tx.tasks.transition(tx.tasks.get('t1')!, 'FAILED', { at: 2000, cause: 'dispatch exhausted', failedBy: 'dispatch' }));
    // Without naming the edge, FAILED stays sticky.
    expect(() => db.tx((tx) => tx.tasks.transition(t, 'SUBMITTED', { at: 3000, cause: 'x' }))).toThrow(IllegalTransitionError);
    t = db.tx((tx) => tx.tasks.transition(t, 'SUBMITTED', { at: 3000, cause: 'retried', deadlineAt: 9000, edge: 'operator-retry' }));
    expect(t).toMatchObject({ state: 'SUBMITTED', failedBy: null, deadlineAt: 9000, outcomeShownAt: null });
    t = db.tx((tx) => tx.tasks.transition(t, 'WORKING', { at: 3500, cause: 'accepted' }));
    t = db.tx((tx) => tx.tasks.transition(t, 'COMPLETED', { at: 4000, cause: 'done' }));
    expect(db.audit.of('t1').map((a) => ({ seq: a.seq, state: a.state }))).toEqual([{ seq: 1, state: 'FAILED' }, { seq: 2, state: 'COMPLETED' }]);
    expect(db.audit.latest('t1')).toMatchObject({ state: 'COMPLETED' });
    expect(() => db.tx((tx) => tx.tasks.transition(t, 'SUBMITTED', { at: 5000, cause: 'x', edge: 'operator-retry' }))).toThrow(IllegalTransitionError);
    db.tx((tx) => tx.tasks.insert(task({ id: 't2' })));
    const byDeadline = db.tx((tx) => tx.tasks.transition(tx.tasks.get('t2')!, 'FAILED', { at: 2000, cause: 'deadline', failedBy: 'deadline' }));
    expect(() => db.tx((tx) => tx.tasks.transition(byDeadline, 'SUBMITTED', { at: 3000, cause: 'x', edge: 'operator-retry' }))).toThrow(/only a task that failed by dispatch/);
  });
});

describe('dispatch state machine', () => {
  it('only a pending dispatch moves; a failed one only back to pending by redispatch', () => {
    for (const from of DISPATCH_STATES.filter((s) => s !== 'pending')) for (const to of DISPATCH_STATES) expect(canMoveDispatch(from, to)).toBe(false);
    const db = Store.open(':memory:');
    db.tx((tx) => {
      tx.tasks.insert(task());
      tx.turns.insert(turn());
    });
    db.tx((tx) => tx.dispatch.move('msg_1', 'pending', { nextAttemptAt: 1500 }));
    db.tx((tx) => tx.dispatch.move('msg_1', 'failed', { nextAttemptAt: null }));
    expect(() => db.tx((tx) => tx.dispatch.move('msg_1', 'accepted', { nextAttemptAt: null }))).toThrow(IllegalDispatchMoveError);
    expect(() => db.tx((tx) => tx.dispatch.move('msg_1', 'pending', { nextAttemptAt: 1 }))).toThrow(IllegalDispatchMoveError);
    db.tx((tx) => tx.dispatch.redispatch('t1', 1, { fromDispatchId: 'msg_1', dispatchId: 'msg_2', envelope: Buffer.from('{}'), replyToken: 'b'.repeat(32), deadlineAt: 9000, at: 3000 }));
    expect(db.turns.get('t1', 1)).toMatchObject({ dispatchId: 'msg_2', dispatchState: 'pending', nextAttemptAt: 3000, replyToken: 'b'.repeat(32) });
    expect(() =>
      db.tx((tx) => tx.dispatch.redispatch('t1', 1, { fromDispatchId: 'msg_2', dispatchId: 'msg_3', envelope: Buffer.from('{}'), replyToken: 'c'.repeat(32), deadlineAt: 9000, at: 3000 })),
    ).toThrow(IllegalDispatchMoveError);
  });
});
