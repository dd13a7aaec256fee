/**
 * WAL checkpoints off the event loop. SQLite runs a checkpoint inside the commit that takes the
 * write-ahead log past 1,000 pages (https://sqlite.org/wal.html#automatic_checkpoint): it copies
 * the log into the database file and syncs both, on the thread that committed. A large reply is
 * written as many short transactions (src/store/large-values.ts), and every 4 MB one of them paid
 * for a checkpoint: 20–250 ms of the event loop on a busy disk (bench/RESULTS.md, reply-parse).
 * The bridge's connection turns automatic checkpoints off and a worker thread, with a connection
 * of its own, runs a PASSIVE checkpoint after commits instead — a checkpoint by another
 * connection blocks neither this one's readers nor its writers (the WAL stays bounded as before:
 * src/store/wal.ts still truncates a grown log).
 *
 * One checkpoint runs at a time; a commit while one runs asks for one more after it.
 *
 * The worker (a thread with its own V8 isolate and SQLite connection: about 9 MiB of resident
 * memory, docs/architecture.md) is started by the first commit that finds the WAL at
 * {@link CHECKPOINT_FROM_BYTES} or more, not at start: a bridge that writes a few rows a day never
 * needs it, and SQLite checkpoints the rest when the store closes. From then on every commit asks
 * for a checkpoint, as before.
 *
 * A worker is started only while the store's path names the file the bridge opened (its `dev:ino`,
 * src/store/file-identity.ts), and the worker checks it again around its own open: a file moved
 * away, deleted or replaced under the bridge (a backup restored with `mv`) is never checkpointed
 * into, as that would copy the bridge's pages into the other file. Such a refusal is reported once;
 * until the path names the bridge's file again, commits start no worker (one `stat` each). A
 * worker already running keeps its connection to the bridge's file, wherever it now is, and goes on.
 */
import type { Worker } from 'node:worker_threads';
import { fileIdentity } from './file-identity.js';

/**
 * The WAL size, in bytes, from which commits ask for checkpoints (and so start the worker): 1 MiB,
 * a quarter of the size the WAL is cut back to (store/wal.ts), an eighth of what SQLite's automatic
 * checkpoint would let it reach (1,000 pages of 8 KiB).
 */
export const CHECKPOINT_FROM_BYTES = 1024 * 1024;

/** What the worker posts after each checkpoint: the WAL's frames and how many were copied, or the failure. */
export type CheckpointResult = { type: 'done'; log: number; checkpointed: number } | { type: 'failed'; message: string };

/**
 * What the worker posts: `ready` once, when its connection is open, then a result per checkpoint;
 * or `refused` instead of `ready` (the path does not name the bridge's file), and it ends itself.
 */
export type FromCheckpointer = { type: 'ready' } | { type: 'refused'; message: string } | CheckpointResult;

/** What the worker is sent: a checkpoint to run, or `stop` (it closes its connection and ends). */
export type ToCheckpointer = 'checkpoint' | 'stop';

/**
 * How long {@link Checkpointer.close} waits, in ms, for the worker to open its connection, and
 * again for it to end itself, before it terminates the thread: 10 s, far past the tens of ms a start
 * takes on a loaded machine.
 */
export const CHECKPOINTER_STOP_MS = 10_000;

/** How a worker ended in {@link Checkpointer.close}: its thread's exit code, and whether it had to be terminated. */
export interface CheckpointerEnd {
  exitCode: number;
  terminated: boolean;
}

/** A started worker's two moments: its connection open (or its exit first), and its exit code. */
interface WorkerLife {
  ready: Promise<void>;
  exit: Promise<number>;
}

/** `p`'s value, or `undefined` once `ms` have passed without it. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The worker's entry: the compiled `.js` beside this file, or the `.ts` source run through tsx. */
function workerUrl(): { url: URL; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  return { url: new URL(fromSource ? './checkpoint-worker.ts' : './checkpoint-worker.js', import.meta.url), execArgv: fromSource ? ['--import', 'tsx'] : [] };
}

export class Checkpointer {
  #worker: Worker | null = null;
  #life: WorkerLife | null = null;
  #running = false;
  #again = false;
  #closed = false;
  #idle: (() => void)[] = [];
  /** Whether the last look found another file, or none, at {@link path} (reported once: {@link onRefused}). */
  #away = false;
  /** The exits of workers that refused the file and end themselves ({@link close} waits for them). */
  #leaving: Promise<number>[] = [];
  /** The last checkpoint's result (tests, the bench). */
  last: CheckpointResult | null = null;
  /** How many workers were started (tests). */
  starts = 0;

  /**
   * @param path the store file (a connection of the worker's own opens it)
   * @param identity the `dev:ino` of the file the bridge's connection opened (file-identity.ts)
   * @param walBytes the WAL's size now, in bytes (read before the worker is started)
   * @param onFailure called with the message when a checkpoint fails (the next commit asks again)
   * @param onRefused called with the message when the path no longer names the bridge's file: once,
   *   until it does again
   */
  constructor(
    readonly path: string,
    private readonly identity: string,
    private readonly walBytes: () => number,
    private readonly onFailure: (message: string) => void = () => {},
    private readonly onRefused: (message: string) => void = onFailure,
  ) {}

  /** True once the worker was started ({@link CHECKPOINT_FROM_BYTES}); false again after close. */
  get started(): boolean {
    return this.#worker !== null;
  }

  /**
   * After a commit: a checkpoint now, or right after the one that runs — once the worker is
   * started, or the WAL has reached {@link CHECKPOINT_FROM_BYTES} (one `stat` of the -wal file until
   * then) and the path names the bridge's file (one `stat` more). Never throws.
   */
  nudge(): void {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    if (!this.#worker && (this.walBytes() < CHECKPOINT_FROM_BYTES || !this.#fileIsOurs())) return;
    this.#running = true;
    const w = this.#ensure();
    w.ref();
    w.postMessage('checkpoint' satisfies ToCheckpointer);
  }

  /** Resolves when no checkpoint runs or is asked for. */
  idle(): Promise<void> {
    if (!this.#running) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /**
   * Stops the worker and resolves once its thread is gone (null when none was started). A worker
   * still starting is first let open its connection; then it is asked to stop, after the
   * checkpoint under way if any, and ends itself. It is terminated only when either wait passes
   * {@link CHECKPOINTER_STOP_MS}: a thread terminated while it loads the SQLite addon aborts the
   * whole process (node-addon-api's fatal `Error::New` when the addon's registration is cut), and
   * so would a process that exits while the worker loads — callers await this before they exit.
   * Never rejects.
   */
  async close(): Promise<CheckpointerEnd | null> {
    this.#closed = true;
    const w = this.#worker;
    const life = this.#life;
    this.#worker = null;
    this.#life = null;
    this.#settle();
    await within(Promise.all(this.#leaving), CHECKPOINTER_STOP_MS);
    if (!w || !life) return null;
    w.ref(); // the process stays up until the thread is gone
    await within(life.ready, CHECKPOINTER_STOP_MS);
    w.postMessage('stop' satisfies ToCheckpointer);
    const exitCode = await within(life.exit, CHECKPOINTER_STOP_MS);
    if (exitCode !== undefined) return { exitCode, terminated: false };
    return { exitCode: await w.terminate(), terminated: true };
  }

  /** Whether the path names the bridge's file; when not, reported once ({@link onRefused}) until it does again. */
  #fileIsOurs(): boolean {
    const seen = fileIdentity(this.path);
    if (seen === this.identity) {
      this.#away = false;
      return true;
    }
    this.#refused(`the store file at ${this.path} is not the one the bridge opened (${seen === null ? 'moved away or deleted' : 'replaced by another file'})`);
    return false;
  }

  #refused(message: string): void {
    if (this.#away) return;
    this.#away = true;
    this.onRefused(`${message}: no WAL checkpoint into it; none is started until the file is back`);
  }

  #ensure(): Worker {
    if (this.#worker) return this.#worker;
    const { url, execArgv } = workerUrl();
    // node:worker_threads by the first worker, not at every start (docs/architecture.md, "Start-up and memory").
    const w = new (process.getBuiltinModule('node:worker_threads').Worker)(url, { execArgv, workerData: { path: this.path, identity: this.identity } });
    this.starts++;
    w.unref();
    let ready!: () => void;
    let exited!: (code: number) => void;
    const life: WorkerLife = { ready: new Promise((resolve) => (ready = resolve)), exit: new Promise((resolve) => (exited = resolve)) };
    w.on('message', (m: FromCheckpointer) => {
      if (m.type === 'ready') return ready();
      if (m.type === 'refused') {
        ready();
        if (this.#worker !== w) return;
        // The worker ends itself: detached at once, so that the next commit starts none meanwhile.
        this.#worker = null;
        this.#life = null;
        this.#leaving.push(life.exit);
        void life.exit.then(() => this.#leaving.splice(this.#leaving.indexOf(life.exit), 1));
        this.#refused(m.message);
        return this.#settle();
      }
      this.last = m;
      if (this.#worker !== w) return; // closed: close() holds the thread until it ends
      if (m.type === 'failed') this.onFailure(m.message);
      if (this.#again) {
        this.#again = false;
        w.postMessage('checkpoint' satisfies ToCheckpointer);
        return;
      }
      w.unref();
      this.#settle();
    });
    const lost = (why: string): void => {
      if (this.#worker !== w) return;
      this.#worker = null;
      this.#life = null;
      this.onFailure(why);
      this.#settle();
    };
    w.on('error', (err) => lost(err.message));
    w.on('exit', (code) => {
      ready();
      exited(code);
      lost(`the checkpoint worker exited (${code})`);
    });
    this.#worker = w;
    this.#life = life;
    return w;
  }

  #settle(): void {
    this.#running = false;
    this.#again = false;
    for (const r of this.#idle.splice(0)) r();
  }
}
