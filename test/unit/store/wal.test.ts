import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Store } from '../../../src/store/store.js';
import { WAL_LIMIT_BYTES } from '../../../src/store/wal.js';

/** Writes `mb` MiB of ledger rows (100 KiB raw each), one transaction per row. */
function write(db: Store, mb: number, tag: string): void {
  const raw = Buffer.alloc(100 * 1024, 0x61);
  for (let i = 0; i < mb * 10; i++) {
    db.tx((tx) =>
      tx.ledger.record({ source: `test:${tag}:${i}`, seenAt: i, messageId: null, fromHeader: null, subject: null, dateHeader: null, size: raw.length, rawSha256: `${tag}${i}`, raw, agent: null, taskId: null, verdict: 'no-task-id', reason: 'test' }),
    );
  }
}

describe('the store WAL stays bounded', () => {
  it('grows while a reader holds a snapshot, is never waited on, and is truncated once the reader lets go', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'mb-wal-')), 'store.sqlite');
    const db = Store.open(path);
    expect(db.settings().journalSizeLimit).toBe(WAL_LIMIT_BYTES);
    const reader = new Database(path, { readonly: true });
    reader.prepare('BEGIN').run();
    reader.prepare('SELECT count(*) FROM ledger').get(); // the snapshot is now pinned
    write(db, 20, 'a');
    const grown = db.walBytes();
    expect(grown).toBeGreaterThan(15 * 1024 * 1024);
    // With the reader still there: it returns at once (busy timeout 0) and changes nothing.
    expect(db.shrinkWal()).toEqual({ before: grown, after: grown, busy: true });
    reader.prepare('COMMIT').run();
    expect(db.shrinkWal()).toEqual({ before: grown, after: 0, busy: false });
    // The busy timeout is back to what the store set.
    expect(db.settings().busyTimeoutMs).toBe(5000);
    expect(db.stats.rowCounts().ledger).toBe(200);
    reader.close();
    db.close();
  });

  it('a small WAL is left alone', () => {
    const db = Store.open(join(mkdtempSync(join(tmpdir(), 'mb-wal-')), 'store.sqlite'));
    write(db, 1, 'b');
    const before = db.walBytes();
    expect(before).toBeLessThanOrEqual(WAL_LIMIT_BYTES);
    expect(db.shrinkWal()).toEqual({ before, after: before, busy: false });
    db.close();
  });
});
