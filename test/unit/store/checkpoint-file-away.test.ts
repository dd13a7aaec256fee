import Database from 'better-sqlite3';
import { copyFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CHECKPOINT_FROM_BYTES, Checkpointer } from '../../../src/store/checkpointer.js';
import { fileIdentity, NotTheStoreFileError, openIfSame } from '../../../src/store/file-identity.js';
import { LARGE_VALUE_CHUNK } from '../../../src/store/large-values.js';
import { Store } from '../../../src/store/store.js';

/**
 * The checkpoint worker opens the store by its path. An attack review restored a backup over a
 * running bridge's store (`mv backup.sqlite bridge.sqlite`): the worker opened the backup with the
 * bridge's -wal still at the path and checkpointed the bridge's pages into it (300 rows became 20);
 * with the file deleted, every commit started a worker that failed (18 in 2 s).
 */
const AT = Date.parse('2026-12-03T11:00:00Z');
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'mb-ckpt-away-'));
  dirs.push(d);
  return d;
};

/** The rows of large_values in the file `path` alone: read from a copy, so no -wal or -shm beside `path` is read. */
function rowsAlone(path: string): { rows: number; check: string } {
  const copy = `${path}.alone-${Math.random().toString(36).slice(2)}`;
  copyFileSync(path, copy);
  const db = new Database(copy, { readonly: true });
  try {
    return { rows: (db.prepare('SELECT count(*) AS n FROM large_values').get() as { n: number }).n, check: db.pragma('quick_check', { simple: true }) as string };
  } finally {
    db.close();
    rmSync(copy);
  }
}

/** `n` small committed rows (a large value's head each). */
function commits(store: Store, n: number): void {
  for (let i = 0; i < n; i++) store.tx((tx) => tx.largeValues.create('bytes', 0, AT + i));
}

describe('the checkpoint worker and a store file that is not the bridge’s', () => {
  it('a backup restored over the running store keeps its rows: no worker opens it with the bridge’s WAL', async () => {
    const d = tempDir();
    const path = join(d, 'bridge.sqlite');
    const backupPath = join(d, 'backup.sqlite');
    const backup = Store.open(backupPath);
    commits(backup, 300);
    await backup.closeAndJoin();
    expect(rowsAlone(backupPath)).toEqual({ rows: 300, check: 'ok' });

    const store = Store.open(path);
    const failures: string[] = [];
    const refusals: string[] = [];
    store.checkpointOffThread((m) => failures.push(m), (m) => refusals.push(m));
    commits(store, 5);
    renameSync(path, join(d, 'orphan.sqlite'));
    copyFileSync(backupPath, path); // the -wal and -shm at the path are still the bridge's
    await store.writeLargeValue(Buffer.alloc(6 * LARGE_VALUE_CHUNK, 7), AT); // the WAL passes 1 MiB
    commits(store, 10);
    await store.checkpoint(); // what the upkeep asks once a minute
    expect(rowsAlone(path)).toEqual({ rows: 300, check: 'ok' });
    expect(store.checkpointWorkerStarts()).toBe(0);
    expect(refusals).toEqual([`the store file at ${path} is not the one the bridge opened (replaced by another file): no WAL checkpoint into it; none is started until the file is back`]);
    expect(failures).toEqual([]);
    await store.closeAndJoin();
    // SQLite leaves the -wal at the path when the file was moved; the bridge emptied it into its
    // own file first, so the next open of the path (the next serve) replays none of its pages.
    const next = new Database(path);
    expect((next.prepare('SELECT count(*) AS n FROM large_values').get() as { n: number }).n).toBe(300);
    next.close();
    expect(rowsAlone(path)).toEqual({ rows: 300, check: 'ok' });
    expect(rowsAlone(join(d, 'orphan.sqlite'))).toEqual({ rows: 5 + 1 + 10, check: 'ok' }); // what the bridge wrote is in its own file
  });

  it('with the store file deleted, commits start no worker and report it once', async () => {
    const path = join(tempDir(), 'bridge.sqlite');
    const store = Store.open(path);
    const failures: string[] = [];
    const refusals: string[] = [];
    store.checkpointOffThread((m) => failures.push(m), (m) => refusals.push(m));
    commits(store, 1);
    rmSync(path);
    await store.writeLargeValue(Buffer.alloc(6 * LARGE_VALUE_CHUNK, 7), AT);
    for (let i = 0; i < 40; i++) {
      commits(store, 1);
      await store.checkpointsIdle();
    }
    await store.checkpoint();
    expect(store.checkpointWorkerStarts()).toBe(0);
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toContain('(moved away or deleted)');
    expect(failures).toEqual([]);
    await store.closeAndJoin();
  });

  it('with the store file moved away and back, the next commit starts the worker and it checkpoints', async () => {
    const path = join(tempDir(), 'bridge.sqlite');
    const store = Store.open(path);
    const refusals: string[] = [];
    store.checkpointOffThread(undefined, (m) => refusals.push(m));
    renameSync(path, `${path}.moved`);
    await store.writeLargeValue(Buffer.alloc(6 * LARGE_VALUE_CHUNK, 7), AT);
    await store.checkpoint();
    expect(store.checkpointWorkerStarts()).toBe(0);
    expect(refusals).toHaveLength(1);
    renameSync(`${path}.moved`, path);
    commits(store, 1);
    await store.checkpoint();
    expect(store.checkpointWorkerStarts()).toBe(1);
    expect(store.lastCheckpoint()).toMatchObject({ type: 'done' });
    expect(refusals).toHaveLength(1);
    await store.closeAndJoin();
  });
});

describe('the checkpoint worker’s own look at the file', () => {
  // The file replaced between the parent's look and the worker's open: the worker, which takes
  // tens of ms to start, opens it after the synchronous rename below.
  it('a worker that finds another file at the path refuses it before any statement, reports it once and ends itself', async () => {
    const d = tempDir();
    const path = join(d, 'bridge.sqlite');
    const other = join(d, 'other.sqlite');
    const bridge = Store.open(path);
    commits(bridge, 5); // in the bridge's WAL, which stays at the path
    const o = Store.open(other);
    commits(o, 3);
    await o.closeAndJoin();
    const failures: string[] = [];
    const refusals: string[] = [];
    const c = new Checkpointer(path, fileIdentity(path)!, () => CHECKPOINT_FROM_BYTES, (m) => failures.push(m), (m) => refusals.push(m));
    c.nudge();
    expect(c.started).toBe(true);
    renameSync(path, `${path}.moved`);
    renameSync(other, path);
    await c.idle();
    expect(refusals).toEqual([`the store file at ${path} is not the one the bridge opened (replaced by another file): no WAL checkpoint into it; none is started until the file is back`]);
    expect(c.started).toBe(false);
    c.nudge(); // the parent's own look now refuses: no second worker, no second report
    expect(c.starts).toBe(1);
    expect(await c.close()).toBeNull(); // after the refusing worker's thread is gone
    expect(failures).toEqual([]);
    expect(c.last).toBeNull();
    expect(rowsAlone(path)).toEqual({ rows: 3, check: 'ok' });
    await bridge.closeAndJoin();
  });

  it('openIfSame opens nothing but the file it was told', () => {
    const path = join(tempDir(), 'a.sqlite');
    Store.open(path).close();
    expect(() => openIfSame(path, '0:0')).toThrow(NotTheStoreFileError);
    expect(() => openIfSame(`${path}.none`, fileIdentity(path)!)).toThrow(/moved away or deleted/);
    openIfSame(path, fileIdentity(path)!).close();
  });
});
