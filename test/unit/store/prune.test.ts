import { describe, expect, it } from 'vitest';
import { DAY, IDS, buildStore } from '../../helpers/store-fixture.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');

const tableCounts = (db: ReturnType<typeof buildStore>) => db.stats.rowCounts();
const ledgerOf = (db: ReturnType<typeof buildStore>, taskId: string) => db.ledger.ofTask(taskId).length;

describe('prune: retention for finished tasks; never an open task', () => {
  it('counts exactly what it then deletes: finished tasks before the cut with their rows, and old ledger rows of no remaining task', () => {
    const db = buildStore(':memory:', NOW);
    const before = tableCounts(db);
    const cut = NOW - 30 * DAY;
    const planned = db.retention.countPrunable(cut);
    expect(planned).toEqual({ tasks: 2, turns: 2, attempts: 2, messages: 2, artifacts: 0, replies: 1, attachments: 1, events: 5, ledger: 2 });
    expect(tableCounts(db)).toEqual(before); // counting deletes nothing
    expect(db.tx((tx) => tx.retention.prune(cut))).toEqual(planned);
    const after = tableCounts(db);
    expect(after).toMatchObject({ tasks: before.tasks - 2, ledger: before.ledger - 2, audit: before.audit });
    expect(db.tasks.get(IDS.oldCompleted)).toBeUndefined();
    expect(db.tasks.get(IDS.oldCanceled)).toBeUndefined();
    expect(db.audit.latest(IDS.oldCompleted)).toMatchObject({ state: 'COMPLETED' }); // the audit entry stays
    expect(db.retention.countPrunable(cut)).toEqual({ tasks: 0, turns: 0, attempts: 0, messages: 0, artifacts: 0, replies: 0, attachments: 0, events: 0, ledger: 0 });
  });

  it('never deletes an open task, however old, nor the ledger rows it relies on (gates 1 and 8a)', () => {
    const db = buildStore(':memory:', NOW);
    const ledgerOfOpen = ledgerOf(db, IDS.oldWorking);
    expect(ledgerOfOpen).toBe(1);
    // A cut in the future: every finished task goes, every open one stays.
    db.tx((tx) => tx.retention.prune(NOW + DAY));
    const states = db.tasks.rows({ limit: 100 }).map((t) => [t.id, t.state]);
    expect(states).toEqual(expect.arrayContaining([[IDS.oldWorking, 'WORKING'], [IDS.inputRequired, 'INPUT_REQUIRED']]));
    expect(states).toHaveLength(2);
    expect(ledgerOf(db, IDS.oldWorking)).toBe(1);
    expect(db.turns.ofTask(IDS.oldWorking).length + db.turns.ofTask(IDS.inputRequired).length).toBe(2);
    expect(db.ledger.query({ limit: 100 }).filter((r) => r.taskId === null)).toHaveLength(0);
  });

  it('a finished task with an event after the cut (a late reply kept yesterday) stays', () => {
    const db = buildStore(':memory:', NOW);
    const task = db.tasks.get(IDS.oldCompleted)!;
    db.tx((tx) => tx.tasks.note(task, NOW - DAY, 'late reply kept: reply <x> (ledger #9)'));
    const counts = db.tx((tx) => tx.retention.prune(NOW - 30 * DAY));
    expect(counts.tasks).toBe(1); // only the old canceled task
    expect(db.tasks.get(IDS.oldCompleted)).toBeDefined();
    expect(ledgerOf(db, IDS.oldCompleted)).toBe(1);
  });

  it('a cut before everything deletes nothing', () => {
    const db = buildStore(':memory:', NOW);
    expect(db.tx((tx) => tx.retention.prune(NOW - 365 * DAY))).toEqual({ tasks: 0, turns: 0, attempts: 0, messages: 0, artifacts: 0, replies: 0, attachments: 0, events: 0, ledger: 0 });
  });
});
