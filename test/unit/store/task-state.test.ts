import { describe, expect, it } from 'vitest';
import { openDb } from '../../../src/store/db.js';
import { canTransition, IllegalTransitionError, TASK_STATES, TERMINAL_STATES } from '../../../src/store/task-state.js';
import { getAudit, getTask, insertTask, taskEvents, transition, type TaskRow } from '../../../src/store/tasks.js';

function task(over: Partial<TaskRow> = {}): TaskRow {
  return {
    id: 't1', agent: 'grok', contextId: 'ctx', state: 'SUBMITTED', stateReason: null, failedBy: null, turn: 1,
    caller: 'test', createdAt: 1000, updatedAt: 1000, deadlineAt: 5000, ...over,
  };
}

describe('task state machine', () => {
  it('terminal states are sticky', () => {
    for (const from of TERMINAL_STATES) for (const to of TASK_STATES) expect(canTransition(from, to)).toBe(false);
  });

  it('records every move with its cause and writes the audit entry exactly once, at the terminal move', () => {
    const db = openDb(':memory:');
    insertTask(db, task());
    let t = getTask(db, 't1')!;
    t = transition(db, t, 'WORKING', { at: 2000, cause: 'webhook accepted (HTTP 202)' });
    expect(getAudit(db, 't1')).toBeUndefined();
    t = transition(db, t, 'FAILED', { at: 6000, cause: 'deadline passed', failedBy: 'deadline' });
    expect(getTask(db, 't1')).toMatchObject({ state: 'FAILED', failedBy: 'deadline', stateReason: 'deadline passed', updatedAt: 6000 });
    expect(taskEvents(db, 't1').map((e) => `${e.fromState}>${e.toState}`)).toEqual(['null>SUBMITTED', 'SUBMITTED>WORKING', 'WORKING>FAILED']);
    expect(getAudit(db, 't1')).toMatchObject({ task: 't1', state: 'FAILED', cause: 'deadline passed', failedBy: 'deadline' });
    expect(() => transition(db, t, 'COMPLETED', { at: 7000, cause: 'late' })).toThrow(IllegalTransitionError);
    expect(db.prepare('SELECT count(*) AS n FROM audit').get()).toEqual({ n: 1 });
  });

  it('keeps status timestamps strictly increasing even within one millisecond', () => {
    const db = openDb(':memory:');
    insertTask(db, task());
    const t = transition(db, getTask(db, 't1')!, 'WORKING', { at: 1000, cause: 'x' });
    expect(t.updatedAt).toBe(1001);
  });
});

describe('reopenAfterDispatchFailure (operator retry)', () => {
  it('reopens only a task that failed by dispatch, and a second terminal arrival writes a second audit entry', async () => {
    const { reopenAfterDispatchFailure } = await import('../../../src/store/tasks.js');
    const db = openDb(':memory:');
    insertTask(db, task());
    let t = transition(db, getTask(db, 't1')!, 'FAILED', { at: 2000, cause: 'dispatch exhausted', failedBy: 'dispatch' });
    t = reopenAfterDispatchFailure(db, t, { at: 3000, cause: 'retried', deadlineAt: 9000 });
    expect(t).toMatchObject({ state: 'SUBMITTED', failedBy: null, deadlineAt: 9000 });
    t = transition(db, t, 'WORKING', { at: 3500, cause: 'accepted' });
    t = transition(db, t, 'COMPLETED', { at: 4000, cause: 'done' });
    expect(db.prepare('SELECT seq, state FROM audit ORDER BY seq').all()).toEqual([{ seq: 1, state: 'FAILED' }, { seq: 2, state: 'COMPLETED' }]);
    expect(getAudit(db, 't1')).toMatchObject({ state: 'COMPLETED' });
    expect(() => reopenAfterDispatchFailure(db, t, { at: 5000, cause: 'x', deadlineAt: 1 })).toThrow(IllegalTransitionError);
    insertTask(db, task({ id: 't2' }));
    const byDeadline = transition(db, getTask(db, 't2')!, 'FAILED', { at: 2000, cause: 'deadline', failedBy: 'deadline' });
    expect(() => reopenAfterDispatchFailure(db, byDeadline, { at: 3000, cause: 'x', deadlineAt: 1 })).toThrow(IllegalTransitionError);
  });
});
