/**
 * quick_check (src/store/integrity.ts), read or memory-mapped: a sound store passes either way, a
 * store with a damaged page fails either way.
 */
import Database from 'better-sqlite3';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Store } from '../../../src/store/store.js';

const dir = mkdtempSync(join(tmpdir(), 'mb-integrity-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A closed store of `n` ledger rows (one file: a rollback journal, as `backup` leaves it). */
function storeWithRows(name: string, n: number): string {
  const path = join(dir, name);
  const store = Store.open(path);
  store.tx((tx) => {
    for (let i = 0; i < n; i++) {
      tx.ledger.record({ source: `m:${i}`, seenAt: i, messageId: `<${i}@x>`, fromHeader: null, subject: null, dateHeader: null, size: 1, rawSha256: `sha-${i}`, raw: null, agent: null, taskId: null, verdict: 'no-task-id', reason: 'r' });
    }
  });
  store.useRollbackJournal();
  store.close();
  return path;
}

describe('quickCheck', () => {
  it.each([false, true])('passes a sound store and fails one with a damaged index page (mapped: %s)', (mapped) => {
    const sound = storeWithRows(`sound-${mapped}.sqlite`, 2000);
    const a = Store.open(sound);
    try {
      expect(a.quickCheck({ mapped })).toEqual({ ok: true, detail: 'ok' });
    } finally {
      a.close();
    }
    const damaged = storeWithRows(`damaged-${mapped}.sqlite`, 2000);
    const raw = new Database(damaged, { readonly: true });
    const page = raw.prepare(`SELECT rootpage FROM sqlite_schema WHERE name = 'ledger_by_sha'`).pluck().get() as number;
    const size = raw.pragma('page_size', { simple: true }) as number;
    raw.close();
    const fd = openSync(damaged, 'r+');
    writeSync(fd, Buffer.alloc(512, 0xa5), 0, 512, (page - 1) * size + 8);
    closeSync(fd);
    const b = Store.open(damaged);
    try {
      expect(b.quickCheck({ mapped }).ok).toBe(false);
    } finally {
      b.close();
    }
  });

});
