import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { CliFailure } from '../../../src/cli/errors.js';
import { resolveLedgerTask, resolveTaskId } from '../../../src/cli/task-id.js';
import { buildStore, IDS } from '../../helpers/store-fixture.js';

const NOW = Date.UTC(2026, 5, 1, 12);

describe('task ids as a person types them (ledger --task <prefix>)', () => {
  const db = buildStore(':memory:', NOW);
  // Tagged mail naming a task that never existed (a forger's guess) is in the ledger too.
  const ghost = 'ab12cd34-0000-4000-8000-00000000dead';
  db.tx((tx) => tx.ledger.record({
    source: 'imap:INBOX:1:999', seenAt: NOW, messageId: '<g@x>', fromHeader: 'x', subject: 'x', dateHeader: null, size: 1,
    rawSha256: createHash('sha256').update('ghost').digest('hex'), raw: null, agent: 'grok', taskId: ghost, verdict: 'unknown-task', reason: 'gate 8',
  }));
  afterAll(() => db.close());

  it('the whole id, or an 8-character prefix as the tables print it, in any case', () => {
    expect(resolveTaskId(db, IDS.oldWorking)).toBe(IDS.oldWorking);
    expect(resolveTaskId(db, IDS.oldWorking.slice(0, 8))).toBe(IDS.oldWorking);
    expect(resolveTaskId(db, IDS.oldWorking.slice(0, 8).toUpperCase())).toBe(IDS.oldWorking);
    expect(resolveLedgerTask(db, IDS.oldWorking.slice(0, 8))).toBe(IDS.oldWorking);
  });

  it('a task id only mail names is found too, whole or by prefix', () => {
    expect(resolveTaskId(db, ghost)).toBeUndefined();
    expect(resolveLedgerTask(db, ghost)).toBe(ghost);
    expect(resolveLedgerTask(db, 'AB12CD34')).toBe(ghost);
  });

  it('nothing matching is "no such task", with the hint for a short prefix', () => {
    expect(() => resolveLedgerTask(db, 'ffffffff')).toThrow(CliFailure);
    expect(() => resolveLedgerTask(db, 'ffffffff')).toThrow(/^no such task: ffffffff, and no mail in the ledger names it; list the tasks with: a2a-mailbridge tasks$/);
    expect(() => resolveLedgerTask(db, 'fff')).toThrow(/no such task: fff \(a prefix needs at least 4 characters\)/);
    expect(() => resolveLedgerTask(db, '%%%%')).toThrow(/no such task/); // no LIKE wildcards
  });
});
