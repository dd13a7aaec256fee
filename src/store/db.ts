import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { MIGRATIONS } from './migrations.js';
import type { TaskChange } from './task-rows.js';
import { WAL_LIMIT_BYTES } from './wal.js';

/** A connection; held by the store (src/store/store.ts) and handed to nothing outside store/. */
export type Db = Database.Database;

/**
 * What the write functions of the store modules get: the connection, usable only while a store
 * transaction is open (`db` throws otherwise), and the sink for the task changes they make.
 */
export interface Writer {
  readonly db: Db;
  changed(c: TaskChange): void;
}

/** Thrown when the database file cannot be used: damaged, from a newer version, or unopenable. */
export class StoreError extends Error {
  override readonly name = 'StoreError';
}

export interface OpenOptions {
  /** Open without write access (the CLI's read commands). Skips migrations. */
  readOnly?: boolean;
  /** How long a writer waits for a lock before SQLITE_BUSY, in ms. */
  busyTimeoutMs?: number;
}

/**
 * Opens (creating when needed) the SQLite store: WAL journal with a size limit (wal.ts), a busy
 * timeout, foreign keys on, `PRAGMA quick_check` at start-up, then the pending migrations.
 *
 * @param path file path, `:memory:`, or the image of a store (`db.serialize()`) to open in memory
 * @throws StoreError when quick_check reports damage, or the file was written by a newer schema.
 */
export function openDb(path: string | Buffer, options: OpenOptions = {}): Db {
  if (typeof path === 'string' && path !== ':memory:' && !options.readOnly) mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const name = typeof path === 'string' ? path : '(image in memory)';
  let db: Db;
  try {
    db = typeof path === 'string' ? new Database(path, { readonly: options.readOnly ?? false, fileMustExist: options.readOnly ?? false }) : new Database(path);
  } catch (err) {
    throw new StoreError(`cannot open the store ${name}: ${(err as Error).message}`, { cause: err });
  }
  try {
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    if (!options.readOnly) {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      // A WAL that grew while a reader held a snapshot is cut back when the log restarts (wal.ts).
      db.pragma(`journal_size_limit = ${WAL_LIMIT_BYTES}`);
    }
    db.pragma('foreign_keys = ON');
    const check = db.pragma('quick_check', { simple: true });
    if (check !== 'ok') {
      // quick_check reports one problem per line; keep the message one line and short.
      const detail = String(check).split('\n').map((l) => l.trim()).filter((l) => l && !/^\*\*\* in database/.test(l)).join('; ');
      const short = detail.length > 300 ? `${detail.slice(0, 300)}…` : detail;
      throw new StoreError(
        `the store ${name} is damaged (quick_check: ${short}); restore it from a backup (a2a-mailbridge backup) or move it aside to start empty`,
      );
    }
    // quick_check read the whole file through the page cache: give that memory back (bench/: +18 MiB RSS on a 1 GB store).
    db.pragma('shrink_memory');
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > MIGRATIONS.length) {
      throw new StoreError(
        `the store ${name} has schema version ${version}, newer than this a2a-mailbridge understands (${MIGRATIONS.length}); upgrade a2a-mailbridge`,
      );
    }
    if (!options.readOnly) migrate(db, version);
    else if (version < MIGRATIONS.length) {
      throw new StoreError(`the store ${name} needs migrations; run a2a-mailbridge serve once to upgrade it`);
    }
    return db;
  } catch (err) {
    db.close();
    if (err instanceof StoreError) throw err;
    const code = (err as { code?: string }).code ?? '';
    if (code.startsWith('SQLITE_NOTADB')) {
      throw new StoreError(
        `the store ${name} is not an SQLite database: check store.path (or --db); if it is the store, it is damaged — restore it from a backup (a2a-mailbridge backup) or move it aside to start empty`,
        { cause: err },
      );
    }
    if (code.startsWith('SQLITE_CORRUPT')) {
      throw new StoreError(
        `the store ${name} is damaged (${(err as Error).message}); restore it from a backup (a2a-mailbridge backup) or move it aside to start empty`,
        { cause: err },
      );
    }
    throw new StoreError(`the store ${name} cannot be used: ${(err as Error).message}`, { cause: err });
  }
}

function migrate(db: Db, from: number): void {
  for (let v = from; v < MIGRATIONS.length; v++) {
    immediate(db, () => {
      db.exec(MIGRATIONS[v]!);
      db.pragma(`user_version = ${v + 1}`);
    });
  }
}

/**
 * Runs `fn` in a `BEGIN IMMEDIATE` transaction: a deferred transaction that reads then writes gets
 * SQLITE_BUSY at once under concurrency (https://sqlite.org/lang_transaction.html). `fn` must be
 * synchronous and must not hold a statement iterator across a write.
 */
export function immediate<T>(db: Db, fn: () => T): T {
  return db.transaction(fn).immediate();
}
