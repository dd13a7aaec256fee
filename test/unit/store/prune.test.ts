import { describe, expect, it } from 'vitest';
import { LARGE_VALUE_CHUNK } from '../../../src/store/large-values.js';
import { THIN_DIGEST, THIN_REASON } from '../../../src/store/prune-thin.js';
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
    expect(planned).toEqual({ tasks: 2, turns: 2, attempts: 2, messages: 2, artifacts: 0, replies: 1, attachments: 1, events: 5, ledger: 2, ledgerThinned: 0 });
    expect(tableCounts(db)).toEqual(before); // counting deletes nothing
    expect(db.tx((tx) => tx.retention.prune(cut))).toEqual(planned);
    const after = tableCounts(db);
    expect(after).toMatchObject({ tasks: before.tasks - 2, ledger: before.ledger - 2, audit: before.audit });
    expect(db.tasks.get(IDS.oldCompleted)).toBeUndefined();
    expect(db.tasks.get(IDS.oldCanceled)).toBeUndefined();
    expect(db.audit.latest(IDS.oldCompleted)).toMatchObject({ state: 'COMPLETED' }); // the audit entry stays
    expect(db.retention.countPrunable(cut)).toEqual({ tasks: 0, turns: 0, attempts: 0, messages: 0, artifacts: 0, replies: 0, attachments: 0, events: 0, ledger: 0, ledgerThinned: 0 });
  });

  it('in batches (the CLI): one transaction per task and per ledger window, the same deletions as one prune, and what stays is the same', () => {
    const one = buildStore(':memory:', NOW);
    const batched = buildStore(':memory:', NOW);
    const cut = NOW + DAY; // every finished task and every old ledger row of no open task
    const planned = batched.retention.countPrunable(cut);
    expect(planned.tasks).toBeGreaterThan(2);
    const commits: number[] = [];
    const tx = batched.tx.bind(batched);
    batched.tx = ((fn: Parameters<typeof tx>[0]) => {
      commits.push(1);
      return tx(fn);
    }) as typeof tx;
    expect(batched.pruneInBatches(cut, { tasks: 1, ledger: 1 })).toEqual(planned);
    // One transaction per task and one more that finds none, then the ledger's windows.
    expect(commits.length).toBeGreaterThanOrEqual(planned.tasks + 2);
    expect(one.tx((t) => t.retention.prune(cut))).toEqual(planned);
    expect(tableCounts(batched)).toEqual(tableCounts(one));
    expect(batched.retention.countPrunable(cut)).toEqual(one.retention.countPrunable(cut));
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
    expect(db.tx((tx) => tx.retention.prune(NOW - 365 * DAY))).toEqual({ tasks: 0, turns: 0, attempts: 0, messages: 0, artifacts: 0, replies: 0, attachments: 0, events: 0, ledger: 0, ledgerThinned: 0 });
  });
});

describe('prune --dry-run counts by the smaller side: the tasks that go, or those that stay', () => {
  /** `n` tasks finished `daysAgo` days before NOW, each with a turn, an attempt, two messages, a reply with an attachment and a ledger row. */
  function finished(db: ReturnType<typeof buildStore>, n: number, daysAgo: number, tag: string): void {
    db.tx((tx) => {
      for (let i = 0; i < n; i++) {
        const at = NOW - daysAgo * DAY + i;
        const id = `${tag}${String(i).padStart(4, '0')}-0000-4000-8000-000000000000`;
        tx.tasks.insert({ id, agent: 'grok', contextId: `c-${tag}-${i}`, state: 'SUBMITTED', stateReason: 'stored', failedBy: null, turn: 1, caller: 'test', createdAt: at, updatedAt: at, deadlineAt: at + DAY });
        tx.turns.insert({ taskId: id, turn: 1, ask: 'job', replyToken: null, deadlineAt: at + DAY, dispatchId: `msg_${tag}${i}`, envelope: Buffer.from('{}'), dispatchState: 'pending', nextAttemptAt: at, acceptedAt: null, replyStatus: null, replyText: null, replyLedgerId: null, repliedAt: null, createdAt: at });
        const a = tx.attempts.start({ dispatchId: `msg_${tag}${i}`, taskId: id, turn: 1, at });
        tx.attempts.finish(a.id, { at, outcome: 'accepted', httpStatus: 202, error: null });
        for (const kind of ['ask', 'reply'] as const) {
          tx.messages.insert({ agent: 'grok', messageId: `${kind}-${tag}-${i}`, taskId: id, contextId: `c-${tag}-${i}`, role: kind === 'ask' ? 'user' : 'agent', kind, turn: 1, text: 'x', contentSha256: 'e'.repeat(64), createdAt: at });
        }
        const ledgerId = tx.ledger.record({ source: `imap:INBOX:9:${tag}${i}`, seenAt: at, messageId: `<${tag}${i}@a>`, fromHeader: null, subject: null, dateHeader: null, size: 1, rawSha256: `${tag}${i}`, raw: null, agent: 'grok', taskId: id, verdict: 'applied:done', reason: 'ok' })!;
        tx.replies.insert({ ledgerId, taskId: id, turn: 1, agent: 'grok', kind: 'done', nonce: '0123456789abcdef', text: 'x', omittedLines: 0, createdAt: at });
        tx.replies.insertAttachment({ ledgerId, seq: 1, taskId: id, kind: 'refused', filename: 'a.bin', mediaType: 'application/octet-stream', size: 1, bytes: null, data: null, reason: 'test' });
        tx.tasks.transition(tx.tasks.get(id)!, 'COMPLETED', { at, cause: 'done', deadlineAt: null });
      }
    });
  }

  it.each([
    ['most tasks go (each table’s kept count less the rows of the tasks that stay)', 40, 2],
    ['few tasks go (the rows of the tasks that go)', 2, 40],
  ])('%s: the count is what prune then deletes', (_what, old, recent) => {
    const db = buildStore(':memory:', NOW);
    finished(db, old, 60, 'dddd');
    finished(db, recent, 2, 'cccc');
    // A finished old task noted after the cut stays, and one of no-task mail before the cut goes.
    db.tx((tx) => tx.tasks.note(tx.tasks.get('dddd0000-0000-4000-8000-000000000000')!, NOW - DAY, 'late reply kept'));
    // A task created before the cut and finished after it stays, and so does the mail naming it seen before the cut.
    const long = 'eeee0000-0000-4000-8000-000000000000';
    db.tx((tx) => {
      tx.tasks.insert({ id: long, agent: 'grok', contextId: 'c-long', state: 'SUBMITTED', stateReason: 'stored', failedBy: null, turn: 1, caller: 'test', createdAt: NOW - 55 * DAY, updatedAt: NOW - 55 * DAY, deadlineAt: null });
      tx.ledger.record({ source: 'imap:INBOX:9:early', seenAt: NOW - 50 * DAY, messageId: '<early@a>', fromHeader: null, subject: null, dateHeader: null, size: 1, rawSha256: 'early', raw: null, agent: 'grok', taskId: long, verdict: 'bad-token', reason: 'gate 9' });
      tx.tasks.transition(tx.tasks.get(long)!, 'CANCELED', { at: NOW - 2 * DAY, cause: 'canceled', deadlineAt: null });
    });
    const cut = NOW - 30 * DAY;
    const planned = db.retention.countPrunable(cut);
    expect(planned.tasks).toBeGreaterThan(0);
    expect(db.tx((tx) => tx.retention.prune(cut))).toEqual(planned);
    expect(db.tasks.get('dddd0000-0000-4000-8000-000000000000')).toBeDefined();
    expect(db.ledger.isSourceRecorded('imap:INBOX:9:early')).toBe(true);
    expect(db.retention.countPrunable(cut)).toEqual({ tasks: 0, turns: 0, attempts: 0, messages: 0, artifacts: 0, replies: 0, attachments: 0, events: 0, ledger: 0, ledgerThinned: 0 });
  });
});

describe('prune keeps a thin row for mail still in its Maildir (src/store/prune-thin.ts)', () => {
  const SOURCE = (n: number): string => `maildir:/home/me/Maildir:17000000${n}.M1P1.host`;

  it('thins the held rows (their large value goes), deletes the rest, counts both as it then does, and never counts a thin row again', async () => {
    const one = buildStore(':memory:', NOW);
    const batched = buildStore(':memory:', NOW);
    const cut = NOW + DAY; // every finished task and every old ledger row of no open task
    const rawValues: number[] = [];
    for (const db of [one, batched]) {
      const value = await db.writeLargeValue(Buffer.alloc(LARGE_VALUE_CHUNK + 1, 7), NOW - 40 * DAY);
      rawValues.push(value);
      db.tx((tx) => {
        // Mail of a task that goes (with its large value), of no task, and of the open task (which stays whole).
        tx.ledger.record({ source: SOURCE(1), seenAt: NOW - 40 * DAY, messageId: '<1@a>', fromHeader: 'a', subject: 's', dateHeader: 'd', size: 9, rawSha256: 'f'.repeat(64), raw: null, rawValue: value, agent: 'grok', taskId: IDS.oldCompleted, verdict: 'applied:done', reason: 'applied', signature: 'sig' });
        tx.ledger.record({ source: SOURCE(2), seenAt: NOW - 40 * DAY, messageId: null, fromHeader: 'x', subject: null, dateHeader: null, size: 3, rawSha256: 'e'.repeat(64), raw: Buffer.from('raw'), agent: null, taskId: null, verdict: 'no-task-id', reason: 'gate 2' });
        tx.ledger.record({ source: SOURCE(3), seenAt: NOW - 40 * DAY, messageId: '<3@a>', fromHeader: 'a', subject: 's', dateHeader: 'd', size: 3, rawSha256: 'd'.repeat(64), raw: null, agent: 'grok', taskId: IDS.oldWorking, verdict: 'bad-token', reason: 'gate 9' });
      });
    }
    const held = new Set([SOURCE(1), SOURCE(2), SOURCE(3), SOURCE(4)]); // 4: a file without a row
    const planned = one.retention.countPrunable(cut, held);
    expect(planned.ledgerThinned).toBe(2);
    expect(planned.ledger).toBe(one.retention.countPrunable(cut).ledger - 2);
    expect(one.tx((tx) => tx.retention.prune(cut, held))).toEqual(planned);
    expect(batched.pruneInBatches(cut, { tasks: 1, ledger: 1 }, held)).toEqual(planned);
    expect(tableCounts(batched)).toEqual(tableCounts(one));
    for (const [i, db] of [one, batched].entries()) {
      for (const n of [1, 2]) {
        const r = db.ledger.query({ limit: 100 }).find((x) => x.source === SOURCE(n))!;
        expect(r).toMatchObject({ seenAt: NOW - 40 * DAY, taskId: null, agent: null, messageId: null, fromHeader: null, subject: null, rawSha256: THIN_DIGEST, reason: THIN_REASON, verdict: n === 1 ? 'applied:done' : 'no-task-id' });
        expect(db.ledger.raw(r.id)).toBeNull();
      }
      expect(db.largeValues.bytes(rawValues[i]!)).toBeNull(); // freed with the row's bytes
      expect(db.largeValues.orphans(Infinity)).toEqual({ count: 0, size: 0 });
      expect(db.ledger.ofTask(IDS.oldWorking).map((r) => r.source)).toContain(SOURCE(3)); // the open task's row stays whole
    }
    // Thin already: neither deleted nor thinned again while held; deleted once its file is gone.
    expect(one.retention.countPrunable(cut, held)).toMatchObject({ ledger: 0, ledgerThinned: 0 });
    expect(one.tx((tx) => tx.retention.prune(cut, held))).toMatchObject({ ledger: 0, ledgerThinned: 0 });
    const gone = new Set([SOURCE(2)]);
    expect(one.retention.countPrunable(cut, gone)).toMatchObject({ ledger: 1, ledgerThinned: 0 });
    expect(one.tx((tx) => tx.retention.prune(cut, gone))).toMatchObject({ ledger: 1, ledgerThinned: 0 });
    expect(one.ledger.isSourceRecorded(SOURCE(1))).toBe(false);
    expect(one.ledger.isSourceRecorded(SOURCE(2))).toBe(true);
    // A thin row's digest is gone: a copy of its mail (another file) is judged, as after a prune before.
    expect(one.ledger.hasRawDigest('e'.repeat(64))).toBe(false);
  });
});
