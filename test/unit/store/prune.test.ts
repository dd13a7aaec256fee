import { describe, expect, it } from 'vitest';
import { countPrunable, pruneFinished } from '../../../src/store/prune.js';
import { getAudit, getTask, listTaskRows, noteEvent } from '../../../src/store/tasks.js';
import { DAY, IDS, buildStore } from '../../helpers/store-fixture.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');

function tableCounts(db: ReturnType<typeof buildStore>) {
  const n = (t: string) => (db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n;
  return { tasks: n('tasks'), turns: n('turns'), attempts: n('dispatch_attempts'), messages: n('messages'), artifacts: n('artifacts'), events: n('task_events'), ledger: n('ledger'), audit: n('audit') };
}

describe('prune (issue 5: retention for finished tasks; never an open task)', () => {
  it('counts exactly what it then deletes: finished tasks before the cut with their rows, and old ledger rows of no remaining task', () => {
    const db = buildStore(':memory:', NOW);
    const before = tableCounts(db);
    const cut = NOW - 30 * DAY;
    const planned = countPrunable(db, cut);
    expect(planned).toEqual({ tasks: 2, turns: 2, attempts: 2, messages: 2, artifacts: 1, events: 5, ledger: 2 });
    expect(tableCounts(db)).toEqual(before); // counting deletes nothing
    expect(pruneFinished(db, cut)).toEqual(planned);
    const after = tableCounts(db);
    expect(after).toMatchObject({ tasks: before.tasks - 2, ledger: before.ledger - 2, audit: before.audit });
    expect(getTask(db, IDS.oldCompleted)).toBeUndefined();
    expect(getTask(db, IDS.oldCanceled)).toBeUndefined();
    expect(getAudit(db, IDS.oldCompleted)).toMatchObject({ state: 'COMPLETED' }); // the audit entry stays
    expect(countPrunable(db, cut)).toEqual({ tasks: 0, turns: 0, attempts: 0, messages: 0, artifacts: 0, events: 0, ledger: 0 });
  });

  it('never deletes an open task, however old, nor the ledger rows it relies on (gates 1 and 8a)', () => {
    const db = buildStore(':memory:', NOW);
    const ledgerOfOpen = (db.prepare(`SELECT count(*) AS n FROM ledger WHERE task_id = ?`).get(IDS.oldWorking) as { n: number }).n;
    expect(ledgerOfOpen).toBe(1);
    // A cut in the future: every finished task goes, every open one stays.
    pruneFinished(db, NOW + DAY);
    const states = listTaskRows(db, { limit: 100 }).map((t) => [t.id, t.state]);
    expect(states).toEqual(expect.arrayContaining([[IDS.oldWorking, 'WORKING'], [IDS.inputRequired, 'INPUT_REQUIRED']]));
    expect(states).toHaveLength(2);
    expect((db.prepare(`SELECT count(*) AS n FROM ledger WHERE task_id = ?`).get(IDS.oldWorking) as { n: number }).n).toBe(1);
    expect((db.prepare(`SELECT count(*) AS n FROM turns WHERE task_id IN (?, ?)`).get(IDS.oldWorking, IDS.inputRequired) as { n: number }).n).toBe(2);
    expect((db.prepare(`SELECT count(*) AS n FROM ledger WHERE task_id IS NULL`).get() as { n: number }).n).toBe(0);
  });

  it('a finished task with an event after the cut (a late reply kept yesterday) stays', () => {
    const db = buildStore(':memory:', NOW);
    const task = getTask(db, IDS.oldCompleted)!;
    noteEvent(db, task, NOW - DAY, 'late reply kept: reply <x> (ledger #9)');
    const counts = pruneFinished(db, NOW - 30 * DAY);
    expect(counts.tasks).toBe(1); // only the old canceled task
    expect(getTask(db, IDS.oldCompleted)).toBeDefined();
    expect((db.prepare(`SELECT count(*) AS n FROM ledger WHERE task_id = ?`).get(IDS.oldCompleted) as { n: number }).n).toBe(1);
  });

  it('a cut before everything deletes nothing', () => {
    const db = buildStore(':memory:', NOW);
    expect(pruneFinished(db, NOW - 365 * DAY)).toEqual({ tasks: 0, turns: 0, attempts: 0, messages: 0, artifacts: 0, events: 0, ledger: 0 });
  });
});
