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
