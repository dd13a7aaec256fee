/**
 * The refused mail of a task's turn (store/ledger.ts `refusedRepliesOf`), which every view of a
 * waiting task reads: what a scan of the task's rows says, read by index ranges bounded by the cap
 * whatever the number of rows naming the task (attack review 8: one sorted query over the task's
 * rows took 320-530 ms a view with 1,000,000 forged rows).
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { REFUSED_COUNT_CAP, REFUSED_SQL } from '../../../src/store/ledger.js';
import { Store } from '../../../src/store/store.js';
import type { Verdict } from '../../../src/uplink/verdicts.js';

/** What the rows say, by a scan: the newest refused row seen at or after `since`, and how many (up to the cap). */
function scanned(store: Store, taskId: string, since: number): { count: number; lastVerdict: string; lastSeenAt: number; lastLedgerId: number } | undefined {
  const db = new Database(store.image());
  try {
    const rows = db.prepare(`SELECT id, verdict, seen_at AS seenAt FROM ledger WHERE task_id = ? AND seen_at >= ? ORDER BY id`).all(taskId, since) as { id: number; verdict: string; seenAt: number }[];
    const refused = rows.filter((r) => !r.verdict.startsWith('applied:') && r.verdict !== 'late:recorded' && r.verdict !== 'duplicate');
    const last = refused.at(-1);
    return last && { count: Math.min(refused.length, REFUSED_COUNT_CAP), lastVerdict: last.verdict, lastSeenAt: last.seenAt, lastLedgerId: last.id };
  } finally {
    db.close();
  }
}

describe('refused mail of a turn', () => {
  it('agrees with a scan: every verdict but applied, late and duplicate, seen since the turn began, counted up to the cap', () => {
    const store = Store.open(':memory:');
    const verdicts: Verdict[] = ['auth:no-border', 'applied:working', 'duplicate', 'no-token', 'late:recorded', 'auth:dkim-unaligned', 'unknown-task'];
    let n = 0;
    const add = (taskId: string, verdict: Verdict, at: number): void =>
      void store.tx((tx) => tx.ledger.record({ source: `s${++n}`, seenAt: at, messageId: null, fromHeader: null, subject: null, dateHeader: null, size: 1, rawSha256: `${n}`, raw: null, agent: 'grok', taskId, verdict, reason: 'r' }));
    for (let i = 0; i < 2500; i++) add(i % 5 === 0 ? 't2' : 't1', verdicts[i % verdicts.length]!, 1000 + i);
    add('t1', 'duplicate', 9000);
    add('t1', 'applied:done', 9001);
    for (const taskId of ['t1', 't2', 't3']) {
      for (const since of [0, 1000, 2000, 3400, 3499, 3500, 9000, 10_000]) expect(store.ledger.refusedRepliesOf(taskId, since), `${taskId} since ${since}`).toEqual(scanned(store, taskId, since));
    }
  });

  it('reads by index: each statement a step or a range of an index, never a scan of the task’s rows or a sort', () => {
    const store = Store.open(':memory:');
    const db = new Database(store.image());
    try {
      for (const [name, sql] of Object.entries(REFUSED_SQL)) {
        const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...(name === 'first' ? [0] : ['t1', 'auth:no-border', 1, 0])) as { detail: string }[]).map((p) => p.detail).join(' | ');
        expect(plan, name).toMatch(/SEARCH ledger USING (COVERING )?INDEX ledger_by_(time|task_verdict)/);
        expect(plan, name).not.toMatch(/TEMP B-TREE|SCAN ledger/);
      }
    } finally {
      db.close();
      store.close();
    }
  });
});
