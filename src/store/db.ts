import Database from 'better-sqlite3';
import { closeSync, constants, mkdirSync, openSync, statSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import { registerStoreFunctions } from './compact.js';
import { MIGRATIONS } from './migrations.js';
import type { TaskChange } from './task-rows.js';
import { WAL_LIMIT_BYTES } from './wal.js';
import { commandLine } from '../config/config-path.js';
import { monotonicMs } from '../monotonic.js';

/** The page size of a new store, in bytes (https://sqlite.org/pragma.html#pragma_page_size). */
export const PAGE_BYTES = 8192;

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
  /**
   * Called before pending migrations run, with the schema version found (0: a new store) and the
   * one they bring it to, and again when they are done with the time they took (ms). Some rebuild
   * a table (migration 15: about 4 s per 100,000 tasks), which `serve` says in its log.
   */
  onMigrate?: (step: { from: number; to: number; tookMs?: number }) => void;
  /** The config whose `store.path` this is, for the command an error names (`serve` with its `--config`: src/config/config-path.ts). */
  configFile?: string;
  /**
   * Open only a store that exists (a command that changes tasks, as `cancel`, has none to change
   * in a new one): neither its folder nor its file is created; a missing file is a StoreError.
   */
  mustExist?: boolean;
}

/**
 * Opens (creating when needed) the SQLite store: WAL journal with a size limit (wal.ts), a busy
 * timeout, foreign keys on, the schema read, then the pending migrations. The cost does not grow
 * with the store: the whole-file check (quick_check) is integrity.ts's, run by `doctor`,
 * `backup` and `serve`'s background check.
 *
 * @param path file path, `:memory:`, or the image of a store (`db.serialize()`) to open in memory
 * @throws StoreError when the path is not a regular file, the file is not an SQLite database or
 *   is another program's (tables at schema version 0), its header or schema is damaged, or it was
 *   written by a newer schema; such a file is left unchanged; with `readOnly` or `mustExist`, when
 *   the file does not exist.
 */
export function openDb(path: string | Buffer, options: OpenOptions = {}): Db {
  const mustExist = options.readOnly === true || options.mustExist === true;
  if (typeof path === 'string' && path !== ':memory:' && !mustExist) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    createPrivate(path);
  }
  const name = typeof path === 'string' ? path : '(image in memory)';
  if (typeof path === 'string' && path !== ':memory:') refuseNonFile(path);
  let db: Db;
  try {
    db = typeof path === 'string' ? new Database(path, { readonly: options.readOnly ?? false, fileMustExist: mustExist }) : new Database(path);
  } catch (err) {
    throw new StoreError(`cannot open the store ${name}: ${(err as Error).message}`, { cause: err });
  }
  try {
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    // The schema is read (and so checked by SQLite) here, not by the first query that needs it:
    // a damaged header or schema page refuses the store now. The whole file is checked by
    // quick_check elsewhere (integrity.ts), never at open: its cost grows with the store.
    // Before any pragma that writes (journal_mode = WAL changes the file): a file that is not
    // ours is left as it was.
    const objects = db.prepare('SELECT count(*) AS n FROM sqlite_schema').get() as { n: number };
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > MIGRATIONS.length) {
      throw new StoreError(
        `the store ${name} has schema version ${version}, newer than this a2a-mailbridge understands (${MIGRATIONS.length}); upgrade a2a-mailbridge`,
      );
    }
    // Migration 1 sets user_version in the transaction that creates the first tables, so a store
    // of ours at version 0 is empty: anything in it belongs to another program.
    if (version === 0 && objects.n > 0) {
      const tables = (db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY rowid LIMIT 4").all() as { name: string }[]).map((t) => t.name);
      const shown = tables.length > 3 ? `${tables.slice(0, 3).join(', ')}…` : tables.join(' and ') || 'schema objects';
      throw new StoreError(
        `the store ${name} is an SQLite database of another program (it holds ${shown} and no a2a-mailbridge schema): check store.path (or --db); a2a-mailbridge creates its store in a new file`,
      );
    }
    if (!options.readOnly) {
      // A new store gets 8 KiB pages: a raw reply (a few KiB) shares a page with its neighbours
      // instead of leaving most of a 4 KiB one empty (bytes per task: bench/RESULTS.md, million).
      // SQLite applies it only before the first table is written; an existing store keeps its own.
      db.pragma(`page_size = ${PAGE_BYTES}`);
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      // A WAL that grew while a reader held a snapshot is cut back when the log restarts (wal.ts).
      db.pragma(`journal_size_limit = ${WAL_LIMIT_BYTES}`);
    }
    // Statement journals in memory: SQLite otherwise spills one past 64 KiB (eight 8 KiB pages,
    // which a write that fires triggers reaches) to a temporary file; a write with a trigger
    // measured twice as fast (bench/million.ts fill). Sorts of the bounded queries stay small.
    db.pragma('temp_store = MEMORY');
    db.pragma('foreign_keys = ON');
    registerStoreFunctions(db);
    if (!options.readOnly) {
      const started = monotonicMs();
      if (version < MIGRATIONS.length) options.onMigrate?.({ from: version, to: MIGRATIONS.length });
      migrate(db, version);
      if (version < MIGRATIONS.length) options.onMigrate?.({ from: version, to: MIGRATIONS.length, tookMs: Math.round(monotonicMs() - started) });
    }
    else if (version < MIGRATIONS.length) {
      throw new StoreError(`the store ${name} needs migrations; run ${commandLine(options.configFile ?? '', 'serve')} once to upgrade it`);
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

/**
 * Creates the store file empty with mode 0600 when nothing is at `path` (O_EXCL, O_NOFOLLOW: one
 * that appeared meanwhile, or a symlink, is left alone), so the store is private from its first
 * byte: SQLite would create it 0644 under umask 022, and makes its -wal and -shm with the store
 * file's mode (sqlite3 os_unix.c, findCreateFileMode). The store holds the agents' answers, task
 * text and reply tokens. An empty file is a new database to SQLite. An error (EEXIST: a file is
 * there; EACCES) leaves the open that follows to say what is wrong, as before.
 */
function createPrivate(path: string): void {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch {
    return;
  }
  closeSync(fd);
}

/**
 * Refuses a path that exists and is not a regular file (a symlink to one is followed): opening a
 * FIFO read-only waits for a writer, and a device is no store.
 * @throws StoreError naming what the path is
 */
function refuseNonFile(path: string): void {
  let st: Stats;
  try {
    st = statSync(path);
  } catch {
    return; // missing (a new store) or not stat-able: SQLite's open says why
  }
  if (st.isFile()) return;
  const kind = st.isDirectory() ? 'a directory' : st.isFIFO() ? 'a FIFO' : st.isCharacterDevice() ? 'a character device' : st.isBlockDevice() ? 'a block device' : st.isSocket() ? 'a socket' : 'not a file';
  throw new StoreError(`the store ${path} is not a regular file (${kind}): check store.path (or --db)`);
}

/**
 * Applies the migrations after `from`, one transaction each; when any ran, checkpoints the WAL
 * they wrote back into the file and truncates it (a new store's schema is about 0.9 MiB of WAL,
 * which no worker would otherwise move before the first megabyte of WAL: src/store/checkpointer.ts).
 * A checkpoint another connection's snapshot holds back stays for the next one; it is not an error.
 */
function migrate(db: Db, from: number): void {
  for (let v = from; v < MIGRATIONS.length; v++) {
    immediate(db, () => {
      db.exec(MIGRATIONS[v]!);
      db.pragma(`user_version = ${v + 1}`);
    });
  }
  if (from < MIGRATIONS.length) db.pragma('wal_checkpoint(TRUNCATE)');
}

/**
 * Runs `fn` in a `BEGIN IMMEDIATE` transaction: a deferred transaction that reads then writes gets
 * SQLITE_BUSY at once under concurrency (https://sqlite.org/lang_transaction.html). `fn` must be
 * synchronous and must not hold a statement iterator across a write.
 */
export function immediate<T>(db: Db, fn: () => T): T {
  return db.transaction(fn).immediate();
}
