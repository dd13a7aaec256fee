import { Checkpointer, type CheckpointResult } from './checkpointer.js';
import { immediate, openDb, StoreError, type Db, type OpenOptions, type Writer } from './db.js';
import { quickCheck, quickCheckInWorker, type IntegrityResult } from './integrity.js';
import { reads, writes, type StoreTx } from './concepts.js';
import { fileIdentity } from './file-identity.js';
import { dropLargeValue, writeLargeValue } from './large-values.js';
import { pruneInBatches, type PruneCounts } from './prune.js';
import type { TaskChange } from './task-rows.js';
import { stmt } from './statements.js';
import { emptyWal, shrinkWal, walBytes } from './wal.js';
import { monotonicMs } from '../monotonic.js';

export { StoreError } from './db.js';
export type { StoreReads, StoreTx } from './concepts.js';
export type { IntegrityResult } from './integrity.js';
export { REFUSED_COUNT_CAP } from './ledger.js';
export { LARGE_VALUE_MIN } from './large-values.js';
export { CLAIM_RETRY_MS, CLAIM_WAIT_MS, claimFiles, claimHeld, claimStore, notesConfig, probeLock, StoreInUseError, storeInUse, storeWasHere, type ClaimHolder, type ClaimHooks, type StoreClaim } from './serve-claim.js';

/** SQLite result codes of a write the disk refused (https://sqlite.org/rescode.html): full, I/O error, read-only. */
const WRITE_FAILURES = /^SQLITE_(?:FULL|IOERR|READONLY)/;

/** A write the disk refused (Store.writeFailure): the SQLite code, its message, and since when (ms since the epoch). */
export interface StoreWriteFailure {
  code: string;
  message: string;
  since: number;
}

/**
 * The store (docs/architecture.md, "The store"): every SQL statement of the bridge lives in
 * store/, behind this facade. Reads are methods of its concept fields (`store.tasks.get(id)`);
 * writes exist only on the transaction object {@link tx} hands its function, and throw outside
 * it. Both state machines (task and dispatch) are checked by the writes that move them, and the
 * schema holds their states. After each transaction commits, every task change it made goes to
 * the {@link onTaskChange} listeners, in order.
 */
export class Store {
  readonly tasks;
  readonly events;
  readonly audit;
  readonly turns;
  readonly attempts;
  readonly ledger;
  readonly messages;
  readonly artifacts;
  readonly replies;
  readonly mailbox;
  readonly stats;
  readonly overview;
  readonly limits;
  readonly retention;
  readonly push;
  readonly schedule;
  readonly largeValues;
  readonly #db: Db;
  /** The `dev:ino` of the file the connection opened (file-identity.ts); null in memory. */
  readonly #identity: string | null;
  readonly #tx: StoreTx;
  #depth = 0;
  #writeFailure: StoreWriteFailure | null = null;
  #checkpointer: Checkpointer | null = null;
  #pending: TaskChange[] = [];
  /** Bumped by every commit here and every commit another connection made (PRAGMA data_version). */
  #generation = 0;
  /** Bumped as #generation is, but by a commit marked `timedViewsOnly` (see {@link untimedViewGeneration}). */
  #untimedViewGeneration = 0;
  #dataVersion: number | null = null;
  /** Commits of other connections seen by {@link generation} (see {@link otherCommits}). */
  #otherCommits = 0;
  #dataVersionAt = Number.NEGATIVE_INFINITY;
  readonly #listeners = new Set<(c: TaskChange) => void>();

  private constructor(db: Db, identity: string | null) {
    this.#db = db;
    this.#identity = identity;
    const r = reads(db);
    this.tasks = r.tasks;
    this.events = r.events;
    this.audit = r.audit;
    this.turns = r.turns;
    this.attempts = r.attempts;
    this.ledger = r.ledger;
    this.messages = r.messages;
    this.artifacts = r.artifacts;
    this.replies = r.replies;
    this.mailbox = r.mailbox;
    this.stats = r.stats;
    this.overview = r.overview;
    this.limits = r.limits;
    this.retention = r.retention;
    this.push = r.push;
    this.schedule = r.schedule;
    this.largeValues = r.largeValues;
    const inTx = (): boolean => this.#depth > 0;
    const writer: Writer = {
      get db() {
        if (!inTx()) throw new StoreError('a store write outside store.tx() (a defect)');
        return db;
      },
      changed: (c) => void this.#pending.push(c),
    };
    this.#tx = writes(db, writer);
  }

  /**
   * Opens (creating when needed) the store: WAL journal, busy timeout, foreign keys, the schema
   * read, then the pending migrations (src/store/db.ts). No whole-file check: see {@link quickCheck}.
   * @param path file path, `:memory:`, or an image from {@link image} to open in memory
   * @throws StoreError when the file cannot be used (damaged, newer schema, not SQLite…), or was
   *   replaced while it was opened (its identity, looked at before and after, differs)
   */
  static open(path: string | Buffer, options: OpenOptions = {}): Store {
    const file = typeof path === 'string' && path !== ':memory:' ? path : null;
    const before = file === null ? null : fileIdentity(file);
    const db = openDb(path, options);
    const identity = file === null ? null : fileIdentity(file);
    if (before !== null && before !== identity) {
      db.close();
      throw new StoreError(`the store ${file} was replaced or moved while it was opened; open it again`);
    }
    return new Store(db, identity);
  }

  /**
   * Whether the store's path still names the file this connection opened (one `stat`): `ours`,
   * `away` (moved away or deleted: nothing there), `replaced` (another file there); null in memory.
   * What is committed goes to the file opened, wherever it is (src/core/store-upkeep.ts reports it).
   */
  fileAtPath(): 'ours' | 'away' | 'replaced' | null {
    if (this.#identity === null) return null;
    const seen = fileIdentity(this.#db.name);
    return seen === this.#identity ? 'ours' : seen === null ? 'away' : 'replaced';
  }

  /**
   * `prune` on a store a bridge may be using: a batch of tasks (or a window of the ledger) per
   * transaction (src/store/prune.ts `pruneInBatches`).
   * @param cut ms since the epoch
   * @param sizes tasks and ledger rows per transaction (default 1,000 and 5,000)
   * @param held the sources of the Maildir files still in their folders: their rows are thinned, not deleted (src/store/prune-thin.ts)
   */
  pruneInBatches(cut: number, sizes?: { tasks: number; ledger: number }, held?: ReadonlySet<string>): PruneCounts {
    return pruneInBatches((fn) => this.tx(fn), cut, sizes, held);
  }

  /**
   * The store could not be written since `since` (ms since the epoch, the process clock): the
   * first SQLite error of the disk's kind (SQLITE_FULL, SQLITE_IOERR…, SQLITE_READONLY…) of a
   * transaction that rolled back, with no commit after it; null once a transaction commits.
   * `GET /health` reports it, and a caller's call that failed on it is told so.
   */
  writeFailure(): StoreWriteFailure | null {
    return this.#writeFailure;
  }

  /**
   * Runs `fn` in one `BEGIN IMMEDIATE` transaction and commits (rolls back if it throws). A
   * `tx` inside another joins it (and its `o`). `fn` must be synchronous. The task changes it made
   * go to the listeners after the commit, never inside the transaction.
   * @param o.timedViewsOnly the transaction changes only what a view whose text counts time shows
   *   (a mailbox check's record: its time, result, error): it advances {@link generation} but not
   *   {@link untimedViewGeneration}
   */
  tx<T>(fn: (tx: StoreTx) => T, o: { timedViewsOnly?: boolean } = {}): T {
    if (this.#depth > 0) return fn(this.#tx);
    this.#pending = [];
    let result: T;
    this.#depth = 1;
    try {
      result = immediate(this.#db, () => fn(this.#tx));
    } catch (err) {
      this.#pending = [];
      const code = (err as { code?: unknown }).code;
      if (typeof code === 'string' && WRITE_FAILURES.test(code)) this.#writeFailure ??= { code, message: (err as Error).message, since: Date.now() };
      throw err;
    } finally {
      this.#depth = 0;
    }
    this.#writeFailure = null;
    this.#generation++;
    if (!o.timedViewsOnly) this.#untimedViewGeneration++;
    this.#checkpointer?.nudge();
    const committed = this.#pending;
    this.#pending = [];
    for (const c of committed) for (const l of this.#listeners) l(c);
    return result;
  }

  /**
   * A number that changes whenever what the store holds may have changed: after each transaction
   * committed on this connection, and after another connection (the CLI, another process)
   * committed (`PRAGMA data_version`, https://sqlite.org/pragma.html#pragma_data_version: a read
   * of the WAL index, no I/O), looked at most once a millisecond — so another process's commit is
   * seen within 1 ms. What is read from the store and kept in memory stays valid while it does not
   * change.
   */
  generation(): number {
    const t = monotonicMs();
    if (t - this.#dataVersionAt < 1) return this.#generation;
    this.#dataVersionAt = t;
    const v = (stmt(this.#db, 'PRAGMA data_version').get() as { data_version: number }).data_version;
    if (v !== this.#dataVersion) {
      if (this.#dataVersion !== null) {
        this.#generation++;
        this.#untimedViewGeneration++;
        this.#otherCommits++;
      }
      this.#dataVersion = v;
    }
    return this.#generation;
  }

  /**
   * How many times {@link generation} found that another connection (the CLI's `cancel`, `retry`,
   * `prune`: another process) committed since it last looked: changes no task event of this
   * process announces. Read it after {@link generation}.
   */
  otherCommits(): number {
    return this.#otherCommits;
  }

  /**
   * {@link generation} without the commits that change only what a view whose text counts time
   * shows (`tx(fn, { timedViewsOnly: true })`: a mailbox check's record, every check_interval_s):
   * a view of a task in any other state (COMPLETED, FAILED, INPUT_REQUIRED…) read at one value
   * stays valid while it holds (src/core/view-cache.ts). Another process's commit advances both.
   * Read it after {@link generation}, which looks at the other processes' commits.
   */
  untimedViewGeneration(): number {
    return this.#untimedViewGeneration;
  }

  /**
   * Writes a large value (a large raw message, a long answer) in bounded steps — a short
   * transaction per chunk, the event loop turning between them — before the decision that refers
   * to it (src/store/large-values.ts). Call it outside a transaction.
   * @param at the time, ms since the epoch
   * @returns its id, for `ledger.record`'s `rawValue` or `replies.insert`'s `textValue`
   */
  writeLargeValue(value: Buffer | string, at: number): Promise<number> {
    return writeLargeValue(this, value, at);
  }

  /** Deletes a large value no row refers to, in the same bounded steps. `size` is its length (bytes, or UTF-16 code units). */
  dropLargeValue(id: number, size: number): Promise<void> {
    return dropLargeValue(this, id, size);
  }

  /**
   * Moves WAL checkpoints off the event loop (src/store/checkpointer.ts): no commit of this
   * connection runs one; a worker thread checkpoints after commits, started by the first commit
   * that finds the WAL at 1 MiB or more (CHECKPOINT_FROM_BYTES). For the long-running bridge;
   * a store in memory has no WAL and is left as it is. No worker checkpoints into a file that is
   * not the one this connection opened ({@link fileAtPath}; checkpointer.ts).
   * @param onFailure called with the message of a checkpoint that failed
   * @param onRefused called with the message, once, when the path no longer names the file (no worker starts until it does again)
   */
  checkpointOffThread(onFailure?: (message: string) => void, onRefused?: (message: string) => void): void {
    if (this.#db.memory || this.#checkpointer || this.#identity === null) return;
    this.#db.pragma('wal_autocheckpoint = 0');
    this.#checkpointer = new Checkpointer(this.#db.name, this.#identity, () => walBytes(this.#db), onFailure, onRefused);
  }

  /** How many checkpoint workers were started (tests: one at a time, none while the file is away). */
  checkpointWorkerStarts(): number {
    return this.#checkpointer?.starts ?? 0;
  }

  /** The result of the worker's last checkpoint ({@link checkpointOffThread}): WAL frames and how many were copied, or its failure; null before the first. */
  lastCheckpoint(): CheckpointResult | null {
    return this.#checkpointer?.last ?? null;
  }

  /** True once the checkpoint worker ({@link checkpointOffThread}) was started. */
  checkpointWorkerStarted(): boolean {
    return this.#checkpointer?.started ?? false;
  }

  /** A checkpoint on the worker ({@link checkpointOffThread}) now, resolved when it is done; nothing without the worker or while the WAL is under 1 MiB (CHECKPOINT_FROM_BYTES). */
  checkpoint(): Promise<void> {
    this.#checkpointer?.nudge();
    return this.checkpointsIdle();
  }

  /** Resolves when no checkpoint asked of the worker ({@link checkpointOffThread}) runs or waits. */
  checkpointsIdle(): Promise<void> {
    return this.#checkpointer?.idle() ?? Promise.resolve();
  }

  /** Calls `listener` with each committed task change (it must not throw). @returns the unsubscribe function */
  onTaskChange(listener: (c: TaskChange) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** `PRAGMA user_version`: the number of migrations applied. */
  schemaVersion(): number {
    return this.#db.pragma('user_version', { simple: true }) as number;
  }

  /**
   * `PRAGMA quick_check` on this connection: reads the whole file, so the caller waits in
   * proportion to the store's size (`doctor`, `backup`). See src/store/integrity.ts.
   * @param o.mapped read the file memory-mapped (`backup`'s own new copy only): see integrity.ts
   */
  quickCheck(o: { mapped?: boolean } = {}): IntegrityResult {
    return quickCheck(this.#db, o);
  }

  /**
   * quick_check of the store file on a worker thread with its own read-only connection (`serve`'s
   * background check): the event loop goes on meanwhile; it checks only the file this connection
   * opened (else `away`: integrity.ts). In memory, it runs here.
   */
  quickCheckInBackground(): Promise<IntegrityResult> {
    return this.#identity === null ? Promise.resolve(quickCheck(this.#db)) : quickCheckInWorker(this.#db.name, this.#identity);
  }

  /** An online copy into `file` (SQLite's backup API: consistent while others write). */
  backup(file: string): Promise<{ totalPages: number }> {
    return this.#db.backup(file);
  }

  /**
   * Truncates a WAL over its size limit when no reader holds an old snapshot (src/store/wal.ts);
   * never waits. Call it outside a transaction.
   * @returns the WAL size before and after, in bytes, and whether a reader kept it from finishing
   */
  shrinkWal(): { before: number; after: number; busy: boolean } {
    return shrinkWal(this.#db);
  }

  /** The connection's settings that bound waiting and the WAL (`PRAGMA busy_timeout`, `journal_size_limit`, `wal_autocheckpoint` in pages: 0 when off). */
  settings(): { busyTimeoutMs: number; journalSizeLimit: number; walAutocheckpoint: number } {
    return {
      busyTimeoutMs: this.#db.pragma('busy_timeout', { simple: true }) as number,
      journalSizeLimit: this.#db.pragma('journal_size_limit', { simple: true }) as number,
      walAutocheckpoint: this.#db.pragma('wal_autocheckpoint', { simple: true }) as number,
    };
  }

  /** The size of the store's WAL file in bytes (0 when there is none, or in memory). */
  walBytes(): number {
    return walBytes(this.#db);
  }

  /**
   * Switches the file to a rollback journal (`journal_mode = DELETE`): one self-contained file,
   * with no -wal/-shm beside it for its readers to leave (a backup copy).
   */
  useRollbackJournal(): void {
    this.#db.pragma('journal_mode = DELETE');
  }

  /** The whole store as bytes, for {@link Store.open} in memory (test fixtures copy a seeded store this way). */
  image(): Buffer {
    return this.#db.serialize();
  }

  /** {@link closeAndJoin}, unawaited (the checkpoint worker is only ever started by `serve`). */
  close(): void {
    void this.closeAndJoin();
  }

  /**
   * Closes the connection, and resolves once the checkpoint worker's thread, if any, is gone
   * (checkpointer.ts `close`). Never rejects. When the path no longer names the file opened
   * ({@link fileAtPath}), SQLite's own checkpoint at close is skipped and the -wal is left at the
   * path (https://sqlite.org/rescode.html#readonly_dbmoved), where the next open would replay the
   * bridge's pages into the file put there: the log is first emptied into the file opened
   * (wal.ts `emptyWal`), after the worker is gone.
   */
  async closeAndJoin(): Promise<void> {
    const worker = this.#checkpointer?.close();
    this.#checkpointer = null;
    const away = this.fileAtPath();
    if (away === 'away' || away === 'replaced') {
      await worker;
      emptyWal(this.#db);
    }
    this.#db.close();
    await worker;
  }
}
