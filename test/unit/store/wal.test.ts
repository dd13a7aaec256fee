import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { immediate, openDb } from '../../../src/store/db.js';
import { recordVerdict } from '../../../src/store/ledger.js';
import { shrinkWal, WAL_LIMIT_BYTES, walBytes } from '../../../src/store/wal.js';

/** Writes `mb` MiB of ledger rows (100 KiB raw each), one transaction per row. */
function write(db: ReturnType<typeof openDb>, mb: number, tag: string): void {
  const raw = Buffer.alloc(100 * 1024, 0x61);
  for (let i = 0; i < mb * 10; i++) {
    immediate(db, () =>
      recordVerdict(db, { source: `test:${tag}:${i}`, seenAt: i, messageId: null, fromHeader: null, subject: null, dateHeader: null, size: raw.length, rawSha256: `${tag}${i}`, raw, agent: null, taskId: null, verdict: 'no-task-id', reason: 'test' }),
    );
  }
}

describe('the store WAL stays bounded', () => {
  it('grows while a reader holds a snapshot, is never waited on, and is truncated once the reader lets go', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'mb-wal-')), 'store.sqlite');
    const db = openDb(path);
    expect(db.pragma('journal_size_limit', { simple: true })).toBe(WAL_LIMIT_BYTES);
    const reader = new Database(path, { readonly: true });
    reader.prepare('BEGIN').run();
    reader.prepare('SELECT count(*) FROM ledger').get(); // the snapshot is now pinned
    write(db, 20, 'a');
    const grown = walBytes(db);
    expect(grown).toBeGreaterThan(15 * 1024 * 1024);
    // With the reader still there: it returns at once (busy timeout 0) and changes nothing.
    expect(shrinkWal(db)).toEqual({ before: grown, after: grown, busy: true });
    reader.prepare('COMMIT').run();
    expect(shrinkWal(db)).toEqual({ before: grown, after: 0, busy: false });
    // The busy timeout is back to what openDb set.
    expect(db.pragma('busy_timeout', { simple: true })).toBe(5000);
    expect((db.prepare('SELECT count(*) AS n FROM ledger').get() as { n: number }).n).toBe(200);
    reader.close();
    db.close();
  });

  it('a small WAL is left alone', () => {
    const db = openDb(join(mkdtempSync(join(tmpdir(), 'mb-wal-')), 'store.sqlite'));
    write(db, 1, 'b');
    const before = walBytes(db);
    expect(before).toBeLessThanOrEqual(WAL_LIMIT_BYTES);
    expect(shrinkWal(db)).toEqual({ before, after: before, busy: false });
    db.close();
  });
});
