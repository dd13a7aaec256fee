import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../../src/store/migrations.js';
import { Store } from '../../../src/store/store.js';

const dir = mkdtempSync(join(tmpdir(), 'mb-migrate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A store file as version `v` of the schema left it (the migrations before it, applied as they shipped). */
function storeAtVersion(v: number): string {
  const path = join(dir, `v${v}-${Math.random().toString(36).slice(2)}.sqlite`);
  const db = new Database(path);
  for (let i = 0; i < v; i++) db.exec(MIGRATIONS[i]!);
  db.pragma(`user_version = ${v}`);
  db.exec(`
    INSERT INTO tasks (id, agent, context_id, state, state_reason, failed_by, turn, caller, created_at, updated_at, deadline_at, outcome_shown_at)
      VALUES ('t1', 'grok', 'c1', 'FAILED', 'deadline passed', 'deadline', 1, 'hermes', 1000, 2000, NULL, 2500),
             ('t2', 'grok', 'c2', 'WORKING', 'accepted', NULL, 1, 'hermes', 1000, 1500, 9000, NULL);
    INSERT INTO turns (task_id, turn, ask, reply_token, deadline_at, dispatch_id, envelope, dispatch_state, next_attempt_at, accepted_at, reply_status, reply_text, reply_ledger_id, replied_at, created_at)
      VALUES ('t1', 1, 'job', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 2000, 'msg_1', x'7b7d', 'accepted', NULL, 1100, NULL, NULL, NULL, NULL, 1000),
             ('t2', 1, 'job', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', 9000, 'msg_2', x'7b7d', 'pending', 1600, NULL, NULL, NULL, NULL, NULL, 1000);
    INSERT INTO task_events (task_id, at, from_state, to_state, cause) VALUES ('t1', 1000, NULL, 'SUBMITTED', 'stored'), ('t1', 2000, 'SUBMITTED', 'FAILED', 'deadline passed');
  `);
  db.close();
  return path;
}

describe('migration 6: the schema holds the states', () => {
  it('keeps every row of a version-5 store, its indexes and the reference from turns to tasks', () => {
    const store = Store.open(storeAtVersion(5));
    try {
      expect(store.schemaVersion()).toBe(MIGRATIONS.length);
      expect(store.tasks.get('t1')).toMatchObject({ state: 'FAILED', failedBy: 'deadline', outcomeShownAt: 2500 });
      expect(store.turns.get('t2', 1)).toMatchObject({ dispatchState: 'pending', nextAttemptAt: 1600, replyToken: 'b'.repeat(32) });
      expect(store.events.of('t1').map((e) => `${e.fromState}>${e.toState}`)).toEqual(['null>SUBMITTED', 'SUBMITTED>FAILED']);
      expect(store.turns.dueDispatches(2000).map((t) => t.dispatchId)).toEqual(['msg_2']);
      // The foreign key now names the rebuilt tasks table.
      expect(() =>
        store.tx((tx) =>
          tx.turns.insert({ taskId: 'nope', turn: 1, ask: 'x', replyToken: null, deadlineAt: 1, dispatchId: 'msg_3', envelope: Buffer.from('{}'), dispatchState: 'pending', nextAttemptAt: 1, acceptedAt: null, replyStatus: null, replyText: null, replyLedgerId: null, repliedAt: null, createdAt: 1 }),
        ),
      ).toThrow(/FOREIGN KEY/);
      expect(() => store.tx((tx) => tx.tasks.insert({ id: 't3', agent: 'grok', contextId: 'c', state: 'DONE' as never, stateReason: null, failedBy: null, turn: 1, caller: null, createdAt: 1, updatedAt: 1, deadlineAt: null }))).toThrow(/CHECK/);
    } finally {
      store.close();
    }
  });

  it('refuses a version-5 store whose rows break the states, and leaves it as it was', () => {
    const path = storeAtVersion(5);
    const db = new Database(path);
    db.exec(`UPDATE tasks SET state = 'DONE' WHERE id = 't2'`);
    db.close();
    expect(() => Store.open(path)).toThrow(/CHECK constraint failed/);
    const after = new Database(path, { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(5);
    after.close();
  });
});

describe('migration 8: the signature that authenticated a mail', () => {
  it('keeps the ledger rows of a version-7 store, which name no signature; new rows are found by signature and Message-ID', () => {
    const path = storeAtVersion(7);
    const db = new Database(path);
    db.exec(`INSERT INTO ledger (source, seen_at, message_id, size, raw_sha256, verdict, reason) VALUES ('imap:INBOX:1:1', 1000, '<a@x>', 10, 'ab', 'applied:done', 'ok')`);
    db.close();
    const store = Store.open(path);
    try {
      expect(store.schemaVersion()).toBe(MIGRATIONS.length);
      expect(store.ledger.isSourceRecorded('imap:INBOX:1:1')).toBe(true);
      expect(store.ledger.authenticatedWith(['c2lnbmF0dXJl'], '<a@x>')).toBeUndefined();
      const id = store.tx((tx) =>
        tx.ledger.record({ source: 'imap:INBOX:1:2', seenAt: 2000, messageId: '<b@x>', fromHeader: null, subject: null, dateHeader: null, size: 10, rawSha256: 'cd', raw: null, agent: null, taskId: null, verdict: 'bad-token', reason: 'gate 9', signature: 'c2lnbmF0dXJl' }),
      );
      expect(store.ledger.authenticatedWith(['b3RoZXI=', 'c2lnbmF0dXJl'], '<b@x>')).toBe(id);
      expect(store.ledger.authenticatedWith(['c2lnbmF0dXJl'], '<a@x>')).toBeUndefined();
    } finally {
      store.close();
    }
  });
});
