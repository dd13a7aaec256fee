import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { registerStoreFunctions } from '../../../src/store/compact.js';
import { MIGRATIONS } from '../../../src/store/migrations.js';
import { Store } from '../../../src/store/store.js';

const dir = mkdtempSync(join(tmpdir(), 'mb-migrate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A store file as version `v` of the schema left it (the migrations before it, applied as they shipped). */
function storeAtVersion(v: number): string {
  const path = join(dir, `v${v}-${Math.random().toString(36).slice(2)}.sqlite`);
  const db = new Database(path);
  registerStoreFunctions(db);
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

describe('migrations and the WAL', () => {
  it('a new store leaves no WAL behind its schema: the migrations are checkpointed into the file at open', () => {
    const path = join(dir, `fresh-${Math.random().toString(36).slice(2)}.sqlite`);
    const store = Store.open(path);
    try {
      expect(existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0).toBe(0);
      expect(statSync(path).size).toBeGreaterThan(0);
    } finally {
      store.close();
    }
  });
});

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

describe('migration 13: a signature digest instead of the signature, packed reply text and audit entries', () => {
  /** A version-12 store with a ledger row of authenticated mail, its reply and an audit entry, as version 12 wrote them. */
  function v12(): string {
    const path = storeAtVersion(12);
    const db = new Database(path);
    db.exec(`
      INSERT INTO ledger (source, seen_at, message_id, size, raw_sha256, verdict, reason, agent, task_id, dkim_b)
        VALUES ('imap:INBOX:1:1', 1000, '<a@x>', 10, 'ab', 'applied:done', 'ok', 'grok', 't1', 'c2lnbmF0dXJl'),
               ('imap:INBOX:1:2', 1100, '<b@x>', 10, 'cd', 'bad-token', 'gate 9', 'grok', 't1', NULL);
      INSERT INTO replies (ledger_id, task_id, turn, agent, kind, nonce, text, omitted_lines, created_at)
        VALUES (1, 't1', 1, 'grok', 'done', '0123456789abcdef', 'the answer as version 12 stored it', 0, 1000);
      INSERT INTO audit (task_id, seq, state, written_at, entry) VALUES ('t1', 1, 'FAILED', 2000, '{"task":"t1","state":"FAILED"}');
    `);
    db.close();
    return path;
  }

  it('converts the signature of an old row, so mail replaying it is still recognised; the signature text is gone', () => {
    const path = v12();
    const store = Store.open(path);
    try {
      expect(store.schemaVersion()).toBe(MIGRATIONS.length);
      // Gate 1 of the old row's signature and Message-ID: the same row, found through the digest.
      expect(store.ledger.authenticatedWith(['b3RoZXI=', 'c2lnbmF0dXJl'], '<a@x>')).toBe(1);
      expect(store.ledger.authenticatedWith(['c2lnbmF0dXJl'], '<b@x>')).toBeUndefined();
      expect(store.ledger.authenticatedWith(['b3RoZXI='], '<a@x>')).toBeUndefined();
      // A new row is recorded by its digest and found the same way.
      const id = store.tx((tx) =>
        tx.ledger.record({ source: 'imap:INBOX:1:3', seenAt: 3000, messageId: '<c@x>', fromHeader: null, subject: null, dateHeader: null, size: 10, rawSha256: 'ef', raw: null, agent: null, taskId: null, verdict: 'bad-token', reason: 'gate 9', signature: 'bmV3' }),
      );
      expect(store.ledger.authenticatedWith(['bmV3'], '<c@x>')).toBe(id);
    } finally {
      store.close();
    }
    const db = new Database(path, { readonly: true });
    try {
      const columns = (db.prepare(`SELECT name FROM pragma_table_info('ledger')`).pluck().all() as string[]);
      expect(columns).toContain('dkim_b_sha256');
      expect(columns).not.toContain('dkim_b');
      const digests = db.prepare(`SELECT id, length(dkim_b_sha256) AS n FROM ledger ORDER BY id`).all();
      expect(digests).toEqual([{ id: 1, n: 32 }, { id: 2, n: null }, { id: 3, n: 32 }]);
      const plan = (db.prepare(`EXPLAIN QUERY PLAN SELECT id FROM ledger WHERE dkim_b_sha256 = ? AND message_id = ? ORDER BY id LIMIT 1`).all(Buffer.alloc(32), '<a@x>') as { detail: string }[]).map((r) => r.detail).join('; ');
      expect(plan).toMatch(/USING INDEX ledger_by_signature_digest/);
    } finally {
      db.close();
    }
  });

  it('reads the reply text and audit entry an old row holds as they were, and packs what it writes from then on', () => {
    const path = v12();
    const store = Store.open(path);
    const answer = 'Finding: retrieval quality dominates generation quality when the corpus is noisy.\n'.repeat(20);
    try {
      expect(store.replies.get(1)?.text).toBe('the answer as version 12 stored it');
      expect(store.audit.latest('t1')).toEqual({ task: 't1', state: 'FAILED' });
      store.tx((tx) => tx.replies.insert({ ledgerId: 2, taskId: 't1', turn: 1, agent: 'grok', kind: 'late', nonce: 'fedcba9876543210', text: answer, omittedLines: 0, createdAt: 3000 }));
      expect(store.replies.get(2)?.text).toBe(answer);
      expect(store.replies.ofTask('t1').map((r) => r.text)).toEqual(['the answer as version 12 stored it', answer]);
    } finally {
      store.close();
    }
    const db = new Database(path, { readonly: true });
    try {
      const row = db.prepare(`SELECT text, length(text_deflate) AS packed FROM replies WHERE ledger_id = 2`).get() as { text: string; packed: number };
      expect(row.text).toBe('');
      expect(row.packed).toBeLessThan(answer.length / 4);
    } finally {
      db.close();
    }
  });
});

describe("migration 14: each task's rows per table in its task row, for prune's counts", () => {
  it("counts the rows of a version-13 store's tasks, keeps them counted on every write, and prune --dry-run counts what prune deletes", () => {
    const path = storeAtVersion(13);
    const db = new Database(path);
    db.exec(`
      INSERT INTO dispatch_attempts (dispatch_id, task_id, turn, attempt, started_at, finished_at, outcome) VALUES ('msg_1', 't1', 1, 1, 1000, 1100, 'accepted'), ('msg_1', 't1', 1, 2, 1200, 1300, 'accepted');
      INSERT INTO messages (agent, message_id, task_id, context_id, role, kind, turn, text, content_sha256, created_at) VALUES ('grok', 'm1', 't1', 'c1', 'user', 'ask', 1, 'job', 'e', 1000);
    `);
    db.close();
    const store = Store.open(path);
    try {
      const raw = (id: string): unknown => {
        const r = new Database(path, { readonly: true });
        try {
          return r.prepare(`SELECT n_turns AS turns, n_attempts AS attempts, n_messages AS messages, n_events AS events FROM tasks WHERE id = ?`).get(id);
        } finally {
          r.close();
        }
      };
      expect(raw('t1')).toEqual({ turns: 1, attempts: 2, messages: 1, events: 2 });
      expect(raw('t2')).toEqual({ turns: 1, attempts: 0, messages: 0, events: 0 });
      store.tx((tx) => tx.messages.insert({ agent: 'grok', messageId: 'm2', taskId: 't2', contextId: 'c2', role: 'user', kind: 'ask', turn: 1, text: 'job', contentSha256: 'e', createdAt: 1600 }));
      expect(raw('t2')).toEqual({ turns: 1, attempts: 0, messages: 1, events: 0 });
      // t1 FAILED at 2000: a cut after it takes t1 and its rows; t2 (open) stays.
      const planned = store.retention.countPrunable(3000);
      expect(planned).toMatchObject({ tasks: 1, turns: 1, attempts: 2, messages: 1, events: 2 });
      expect(store.tx((tx) => tx.retention.prune(3000))).toEqual(planned);
      expect(store.retention.countPrunable(3000)).toMatchObject({ tasks: 0, turns: 0, attempts: 0, messages: 0, events: 0 });
    } finally {
      store.close();
    }
  });
});

describe('migration 15: the reply status rejected in the schema of turns and replies', () => {
  /** What migration 15 must keep of a store: the indexes and triggers of both tables, their rows, and the counts the triggers hold. */
  function kept(path: string): Record<string, unknown> {
    const db = new Database(path, { readonly: true });
    try {
      const all = (sql: string): unknown[] => db.prepare(sql).all();
      return {
        schema: (all(`SELECT type, name, tbl_name AS tbl, sql FROM sqlite_schema WHERE tbl_name IN ('turns', 'replies') AND type IN ('index', 'trigger') ORDER BY name`) as { sql: string | null }[]).map(
          (r) => ({ ...r, sql: r.sql?.replace(/\s+/g, ' ') ?? null }),
        ),
        // Every column of turns but the one a later migration adds (19: ledger_after, src/store/turn-ledger.ts).
        turns: (all(`SELECT * FROM turns ORDER BY task_id, turn`) as Record<string, unknown>[]).map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => k !== 'ledger_after'))),
        replies: all(`SELECT * FROM replies ORDER BY ledger_id`),
        taskRows: all(`SELECT id, n_turns, n_replies FROM tasks ORDER BY id`),
        dispatchCounts: all(`SELECT * FROM dispatch_counts ORDER BY state`),
        rowCounts: all(`SELECT * FROM row_counts ORDER BY name`),
      };
    } finally {
      db.close();
    }
  }

  it('keeps every row, count, index and trigger of a version-14 store; the CHECKs admit rejected and still refuse other words', () => {
    const path = storeAtVersion(14);
    const db = new Database(path);
    registerStoreFunctions(db);
    db.exec(`
      INSERT INTO large_values (id, kind, size, created_at) VALUES (1, 'text', 9, 1000);
      INSERT INTO large_value_chunks (value_id, seq, data) VALUES (1, 1, 'long text');
      INSERT INTO replies (ledger_id, task_id, turn, agent, kind, nonce, text, omitted_lines, created_at, text_value)
        VALUES (1, 't1', 1, 'grok', 'late', '0123456789abcdef', '', 0, 2100, 1),
               (2, 't2', 1, 'grok', 'working', 'fedcba9876543210', 'half way', 2, 1500, NULL);
      UPDATE turns SET reply_status = 'working', reply_ledger_id = 2, replied_at = 1500 WHERE task_id = 't2';
    `);
    db.close();
    const before = kept(path);
    expect((before.schema as unknown[]).length).toBe(15); // 3 indexes, 2 of the constraints of turns, 10 triggers

    const store = Store.open(path);
    try {
      expect(store.schemaVersion()).toBe(MIGRATIONS.length);
      expect(kept(path)).toEqual(before);
      // The new word is taken by both tables, through the store's own writes.
      store.tx((tx) => {
        tx.replies.insert({ ledgerId: 3, taskId: 't2', turn: 1, agent: 'grok', kind: 'rejected', nonce: '00112233445566aa', text: 'I will not.', omittedLines: 0, createdAt: 1700 });
        tx.turns.recordReply('t2', 1, { status: 'rejected', text: null, ledgerId: 3, at: 1700, revokeToken: true });
      });
      expect(store.turns.get('t2', 1)).toMatchObject({ replyStatus: 'rejected', replyText: 'I will not.', replyToken: null });
      expect(store.replies.get(3)).toMatchObject({ kind: 'rejected', text: 'I will not.' });
      // Other words are refused as before.
      expect(() => store.tx((tx) => tx.turns.recordReply('t1', 1, { status: 'declined' as never, text: null, ledgerId: 9, at: 1, revokeToken: false }))).toThrow(/CHECK constraint failed/);
      expect(() => store.tx((tx) => tx.replies.insert({ ledgerId: 4, taskId: 't1', turn: 1, agent: 'grok', kind: 'declined' as never, nonce: 'x', text: 'x', omittedLines: 0, createdAt: 1 }))).toThrow(/CHECK constraint failed/);
      // The reference from turns to tasks holds.
      expect(() =>
        store.tx((tx) =>
          tx.turns.insert({ taskId: 'nope', turn: 1, ask: 'x', replyToken: null, deadlineAt: 1, dispatchId: 'msg_3', envelope: Buffer.from('{}'), dispatchState: 'pending', nextAttemptAt: 1, acceptedAt: null, replyStatus: null, replyText: null, replyLedgerId: null, repliedAt: null, createdAt: 1 }),
        ),
      ).toThrow(/FOREIGN KEY/);
      // The triggers work on the rebuilt tables: prune deletes t1 (FAILED at 2000) with its reply, its large value and its counts.
      expect(store.tx((tx) => tx.retention.prune(3000))).toMatchObject({ tasks: 1, turns: 1, replies: 1 });
    } finally {
      store.close();
    }
    const after = kept(path);
    expect(after.rowCounts).toContainEqual({ name: 'replies', n: 2 });
    expect(after.dispatchCounts).toEqual([{ state: 'accepted', n: 0 }, { state: 'pending', n: 1 }]);
    expect(after.taskRows).toEqual([{ id: 't2', n_turns: 1, n_replies: 2 }]);
    const left = new Database(path, { readonly: true });
    try {
      expect(left.prepare(`SELECT count(*) AS n FROM large_values`).get()).toEqual({ n: 0 });
    } finally {
      left.close();
    }
  });
});

describe('a file at store.path that is not a store of ours', () => {
  it("refuses another program's SQLite database and leaves it as it was (its tables, its journal mode), read-only or not", () => {
    const path = join(dir, `other-${Math.random().toString(36).slice(2)}.db`);
    const other = new Database(path);
    other.exec("CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('precious')");
    other.close();
    const before = readFileSync(path);
    const message = `the store ${path} is an SQLite database of another program (it holds notes and no a2a-mailbridge schema): check store.path (or --db); a2a-mailbridge creates its store in a new file`;
    expect(() => Store.open(path)).toThrow(message);
    expect(() => Store.open(path, { readOnly: true })).toThrow(message);
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(existsSync(`${path}-wal`)).toBe(false);
    const again = new Database(path, { readonly: true });
    expect(again.pragma('journal_mode', { simple: true })).toBe('delete');
    expect(again.prepare("SELECT group_concat(name) AS n FROM sqlite_schema WHERE type = 'table'").get()).toEqual({ n: 'notes' });
    again.close();
  });

  it('refuses a FIFO or a device at store.path at once (opening a FIFO read-only waited for a writer)', () => {
    const fifo = join(dir, `fifo-${Math.random().toString(36).slice(2)}.db`);
    execFileSync('mkfifo', [fifo]);
    expect(() => Store.open(fifo, { readOnly: true })).toThrow(`the store ${fifo} is not a regular file (a FIFO): check store.path (or --db)`);
    expect(() => Store.open(fifo)).toThrow(`the store ${fifo} is not a regular file (a FIFO)`);
    expect(() => Store.open('/dev/zero', { readOnly: true })).toThrow('the store /dev/zero is not a regular file (a character device)');
  });

  it('opens an empty file, as a new store', () => {
    const path = join(dir, `empty-${Math.random().toString(36).slice(2)}.db`);
    writeFileSync(path, '');
    const s = Store.open(path);
    expect(s.tasks.get('nothing')).toBeUndefined();
    s.close();
  });
});

describe('openDb says when it migrates', () => {
  it('onMigrate is called before and after pending migrations, with the versions and the time they took, and not when none is pending', () => {
    const path = storeAtVersion(14);
    const steps: { from: number; to: number; tookMs?: number }[] = [];
    Store.open(path, { onMigrate: (s) => steps.push(s) }).close();
    expect(steps).toEqual([
      { from: 14, to: MIGRATIONS.length },
      { from: 14, to: MIGRATIONS.length, tookMs: expect.any(Number) as number },
    ]);
    steps.length = 0;
    Store.open(path, { onMigrate: (s) => steps.push(s) }).close();
    expect(steps).toEqual([]);
  });
});
