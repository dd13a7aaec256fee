/**
 * The heavy per-message work of large messages — local DKIM verification (canonicalizing and
 * hashing the body) and reply parsing (MIME decoding, the reply block) — run on one worker thread,
 * so the event loop keeps answering `/health` and A2A calls while a 10 MB reply is judged (on the
 * main thread each stalled it for 200–400 ms: bench/RESULTS.md, reply-parse). Small messages are
 * judged in place: the round trip would cost more than the work; but a small reply whose body is
 * HTML only is parsed here too, as its conversion to text is not linear (reply-format.ts).
 *
 * One long-lived worker serves jobs in turn; it is started on the first job, holds the process
 * open only while jobs are pending, and is replaced when it dies. Each job has a time budget: past
 * it the worker is stopped (a parser cannot be interrupted otherwise), the job fails with
 * {@link BudgetError}, and the jobs still pending go to a fresh worker. Key requests of the worker's
 * DKIM verification are answered here, by the caller's resolver (which may be a function in this
 * thread, as tests inject); dkim.ts gives one that answers from keys looked up before the job, so a
 * job's budget never includes a DNS wait.
 */
import type { Worker } from 'node:worker_threads';
import type { DnsResolver } from './dkim.js';

/** Messages of at least this many bytes are judged on the worker. */
export const OFFLOAD_MIN_BYTES = 256 * 1024;
/** The default time budget of one job, in ms (a linear parse of 10 MB takes well under 1 s). */
export const OFFLOAD_BUDGET_MS = 10_000;

/**
 * The worker's heap limit (V8's old generation), in MiB: with the time budget, what bounds one
 * message's cost. A reply of 32 MiB of text (reply-format.ts REPLY_PARSE_MAX_BYTES) or 10 MB of
 * HTML (the default mailbox.max_message_bytes) parses within it (256 MiB was too little for the
 * HTML); 1 MB of HTML nested 1,000 deep grew the worker past 800 MiB before its time budget ran
 * out (attack review 6, F1). Past the limit V8 stops the worker, the job goes to a fresh one
 * once, then fails ({@link WorkerLostError}).
 */
export const WORKER_HEAP_MB = 512;

/** The heap limit the next worker starts with, in MiB ({@link setWorkerHeapLimit}). */
let workerHeapMb = WORKER_HEAP_MB;

/**
 * Sets the heap limit of the workers started from now on (MiB) and stops the current one, so the
 * next job starts a worker with it: a seam for tests of a message that exhausts it. `serve` never
 * calls it.
 */
export function setWorkerHeapLimit(mb: number): void {
  workerHeapMb = mb;
  const w = worker;
  worker = null;
  if (w) void w.terminate();
  // Jobs the stopped worker held go to a fresh one, as when a job runs over its budget.
  if (pending.size) repost('the worker heap limit changed');
}

/** A job ran over its time budget; the message says which budget. */
export class BudgetError extends Error {
  override readonly name = 'BudgetError';
}

/**
 * Thrown when the worker stopped twice while running a job (its heap limit, {@link WORKER_HEAP_MB},
 * or a crash): the job's message is what stops it, and is not posted a third time.
 */
export class WorkerLostError extends Error {
  override readonly name = 'WorkerLostError';
}

/**
 * The clock of a job's time budget: calls `expire` once `ms` have passed, unless the function it
 * returns is called first (the job finished). The default runs on the event loop's timers; a test
 * injects one that expires at a point it chooses.
 */
export type BudgetTimer = (ms: number, expire: () => void) => () => void;

/** The default {@link BudgetTimer}: an unref'd `setTimeout` (it never holds the process open). */
export const timeoutBudget: BudgetTimer = (ms, expire) => {
  const t = setTimeout(expire, ms);
  t.unref();
  return () => clearTimeout(t);
};

export type JobKind = 'reply' | 'dkim';

interface Job {
  id: number;
  kind: JobKind;
  /** The message, in shared memory ({@link sharedCopy}). */
  raw: Uint8Array;
  options: Record<string, unknown>;
  resolver?: DnsResolver;
  budgetMs: number;
  /** Workers the job was posted to: a job whose worker died twice fails rather than kill a third. */
  posts: number;
  /** Stops the budget's clock (set once the job is posted). */
  cancelBudget?: () => void;
  resolve(value: unknown): void;
  reject(err: Error): void;
}

/** What the worker posts. */
export type FromWorker =
  | { type: 'done'; id: number; result: unknown }
  | { type: 'failed'; id: number; message: string; name?: string }
  | { type: 'dns'; id: number; lookup: number; name: string; rrtype: string };

/** What the worker is sent. */
export type ToWorker =
  | { type: 'job'; id: number; kind: JobKind; raw: Uint8Array; options: Record<string, unknown> }
  | { type: 'dns'; lookup: number; answer?: unknown; error?: { message: string; code?: string } };

let worker: Worker | null = null;
const pending = new Map<number, Job>();
let nextId = 1;

/** The worker's entry: the compiled `.js` beside this file, or the `.ts` source run through tsx. */
function workerUrl(): { url: URL; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  return { url: new URL(fromSource ? './offload-worker.ts' : './offload-worker.js', import.meta.url), execArgv: fromSource ? ['--import', 'tsx'] : [] };
}

function start(): Worker {
  const { url, execArgv } = workerUrl();
  const w = new (process.getBuiltinModule('node:worker_threads').Worker)(url, { execArgv, resourceLimits: { maxOldGenerationSizeMb: workerHeapMb } });
  w.unref();
  w.on('message', (m: FromWorker) => {
    const job = pending.get(m.id);
    if (!job) return;
    if (m.type === 'dns') {
      const reply = (msg: ToWorker): void => {
        if (worker === w) w.postMessage(msg);
      };
      Promise.resolve()
        .then(() => job.resolver!(m.name, m.rrtype))
        .then(
          (answer) => reply({ type: 'dns', lookup: m.lookup, answer }),
          (err: NodeJS.ErrnoException) => reply({ type: 'dns', lookup: m.lookup, error: { message: err?.message ?? String(err), ...(err?.code ? { code: err.code } : {}) } }),
        );
      return;
    }
    settle(job);
    if (m.type === 'done') job.resolve(m.result);
    else job.reject(Object.assign(new Error(m.message), m.name ? { name: m.name } : {}));
  });
  // A worker that died (a crash, an exhausted heap) leaves its jobs to a fresh one.
  const lost = (why: string): void => {
    if (worker !== w) return;
    worker = null;
    repost(why);
  };
  w.on('error', (err) => lost(err.message));
  w.on('exit', (code) => lost(`the worker exited (${code})`));
  return w;
}

/** Posts every pending job to a fresh worker (with the time each has left); a job lost twice fails. */
function repost(why: string): void {
  for (const job of [...pending.values()]) {
    if (job.posts >= 2) {
      settle(job);
      job.reject(new WorkerLostError(`the parse worker stopped twice while judging this message (${why})`));
    } else post(ensure(), job);
  }
}

function ensure(): Worker {
  worker ??= start();
  return worker;
}

/** The shared copy of each message posted (see {@link sharedCopy}), while the message is alive. */
const sharedCopies = new WeakMap<Buffer, Promise<Uint8Array>>();

/** Bytes copied into shared memory between two turns of the event loop. */
const COPY_SLICE_BYTES = 1024 * 1024;

/**
 * The message in shared memory, copied there once, a slice at a time with a turn of the event
 * loop between slices: posting a Buffer copies the whole memory under it every time (a 10 MB
 * reply is posted twice, to verify DKIM and to parse, and may sit in a larger pool), while a view
 * of a SharedArrayBuffer reaches the worker without a copy. Neither thread writes to it.
 */
function sharedCopy(raw: Buffer): Promise<Uint8Array> {
  let copy = sharedCopies.get(raw);
  if (!copy) {
    copy = (async () => {
      const view = new Uint8Array(new SharedArrayBuffer(raw.length));
      for (let at = 0; at < raw.length; at += COPY_SLICE_BYTES) {
        if (at > 0) await new Promise<void>((resolve) => setImmediate(resolve));
        view.set(raw.subarray(at, at + COPY_SLICE_BYTES), at);
      }
      return view;
    })();
    sharedCopies.set(raw, copy);
  }
  return copy;
}

function post(w: Worker, job: Job): void {
  job.posts++;
  w.ref();
  w.postMessage({ type: 'job', id: job.id, kind: job.kind, raw: job.raw, options: job.options } satisfies ToWorker);
}

function settle(job: Job): void {
  job.cancelBudget?.();
  pending.delete(job.id);
  if (pending.size === 0) worker?.unref();
}

/**
 * Runs one job on the worker.
 *
 * @param o.budgetMs the job's time budget (default {@link OFFLOAD_BUDGET_MS})
 * @param o.timer the clock of the budget (default {@link timeoutBudget}, the event loop's timers)
 * @param o.resolver the DNS resolver a `dkim` job looks keys up with
 * @param o.options passed to the job (`dkim`: `{ timeoutMs, now }`, `now` in ms)
 * @returns the job's result
 * @throws BudgetError when the job ran over its budget; Error when the worker job failed
 */
export async function offload(kind: JobKind, raw: Buffer, o: { budgetMs?: number; timer?: BudgetTimer; resolver?: DnsResolver; options?: Record<string, unknown> } = {}): Promise<unknown> {
  const data = await sharedCopy(raw);
  return new Promise((resolve, reject) => {
    const budgetMs = o.budgetMs ?? OFFLOAD_BUDGET_MS;
    const job: Job = { id: nextId++, kind, raw: data, options: o.options ?? {}, budgetMs, posts: 0, resolve, reject, ...(o.resolver ? { resolver: o.resolver } : {}) };
    pending.set(job.id, job);
    post(ensure(), job);
    const expire = (): void => {
      if (!pending.has(job.id)) return; // finished first
      settle(job);
      reject(new BudgetError(`not done within the ${budgetMs / 1000} s time budget (${raw.length} bytes)`));
      // Stopping the worker is the only way to stop a parser that runs on; the other jobs move
      // to a fresh one (a result the old one still posts is taken as well).
      const w = worker;
      worker = null;
      if (w) void w.terminate();
      if (pending.size) repost('another message ran over its budget');
    };
    const cancel = (o.timer ?? timeoutBudget)(budgetMs, expire);
    if (pending.has(job.id)) job.cancelBudget = cancel;
    else cancel();
  });
}
