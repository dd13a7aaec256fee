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
 */
import type { Worker } from 'node:worker_threads';

/**
 * The WAL size, in bytes, from which commits ask for checkpoints (and so start the worker): 1 MiB,
 * a quarter of the size the WAL is cut back to (store/wal.ts), an eighth of what SQLite's automatic
 * checkpoint would let it reach (1,000 pages of 8 KiB).
 */
export const CHECKPOINT_FROM_BYTES = 1024 * 1024;

/** What the worker posts after each checkpoint: the WAL's frames and how many were copied, or the failure. */
export type FromCheckpointer = { type: 'done'; log: number; checkpointed: number } | { type: 'failed'; message: string };

/** The worker's entry: the compiled `.js` beside this file, or the `.ts` source run through tsx. */
function workerUrl(): { url: URL; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  return { url: new URL(fromSource ? './checkpoint-worker.ts' : './checkpoint-worker.js', import.meta.url), execArgv: fromSource ? ['--import', 'tsx'] : [] };
}

export class Checkpointer {
  #worker: Worker | null = null;
  #running = false;
  #again = false;
  #closed = false;
  #idle: (() => void)[] = [];
  /** The last checkpoint's result (tests, the bench). */
  last: FromCheckpointer | null = null;

  /**
   * @param path the store file (a connection of the worker's own opens it)
   * @param walBytes the WAL's size now, in bytes (read before the worker is started)
   * @param onFailure called with the message when a checkpoint fails (the next commit asks again)
   */
  constructor(
    readonly path: string,
    private readonly walBytes: () => number,
    private readonly onFailure: (message: string) => void = () => {},
  ) {}

  /** True once the worker was started ({@link CHECKPOINT_FROM_BYTES}); false again after close. */
  get started(): boolean {
    return this.#worker !== null;
  }

  /**
   * After a commit: a checkpoint now, or right after the one that runs — once the worker is
   * started, or the WAL has reached {@link CHECKPOINT_FROM_BYTES} (one `stat` of the -wal file until
   * then). Never throws.
   */
  nudge(): void {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    if (!this.#worker && this.walBytes() < CHECKPOINT_FROM_BYTES) return;
    this.#running = true;
    const w = this.#ensure();
    w.ref();
    w.postMessage('checkpoint');
  }

  /** Resolves when no checkpoint runs or is asked for. */
  idle(): Promise<void> {
    if (!this.#running) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Stops the worker (a checkpoint under way finishes or is abandoned: SQLite stays consistent either way). */
  async close(): Promise<void> {
    this.#closed = true;
    const w = this.#worker;
    this.#worker = null;
    this.#settle();
    if (w) await w.terminate();
  }

  #ensure(): Worker {
    if (this.#worker) return this.#worker;
    const { url, execArgv } = workerUrl();
    // node:worker_threads by the first worker, not at every start (docs/architecture.md, "Start-up and memory").
    const w = new (process.getBuiltinModule('node:worker_threads').Worker)(url, { execArgv, workerData: { path: this.path } });
    w.unref();
    w.on('message', (m: FromCheckpointer) => {
      this.last = m;
      if (m.type === 'failed') this.onFailure(m.message);
      if (this.#again && !this.#closed) {
        this.#again = false;
        w.postMessage('checkpoint');
        return;
      }
      w.unref();
      this.#settle();
    });
    const lost = (why: string): void => {
      if (this.#worker !== w) return;
      this.#worker = null;
      this.onFailure(why);
      this.#settle();
    };
    w.on('error', (err) => lost(err.message));
    w.on('exit', (code) => lost(`the checkpoint worker exited (${code})`));
    this.#worker = w;
    return w;
  }

  #settle(): void {
    this.#running = false;
    this.#again = false;
    for (const r of this.#idle.splice(0)) r();
  }
}
