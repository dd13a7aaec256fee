import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * The bodies of push notifications (src/core/push.ts), rendered once per change of a task and
 * shared: by every configuration of the task (one change queues a delivery per configuration) and
 * by a delivery's retries while the task has not changed. Before (attack review 4, 2026-12-02),
 * each delivery and each retry built its own task view and JSON, all started in one synchronous
 * loop: 10 configurations of a task with a 4 MB reply stalled the event loop about 10 s.
 *
 * The key is the delivery's change (its task, state and time), the configuration's dialect, the
 * agent, and the task row as the delivery's claim read it; a committed change of the task in this
 * process drops the task's bodies ({@link changed}), and a change by another process (the CLI's
 * `retry`) moves the task row, hence the key. The body itself is the snapshot the render reads
 * (src/core/push.ts `snapshot`), not the claimed row: a commit between claim and render drops the
 * entry, and the waiters get the newer state whole.
 *
 * Renders run one at a time, each in its own turn of the event loop (after `setImmediate`), so
 * I/O — another caller's GetTask — is served between two renders however many deliveries fall due
 * together.
 *
 * Bounded: bodies kept sum to at most {@link PUSH_BODIES_MAX_BYTES}, the least recently used out
 * first; a body heavier than that is handed to the deliveries already waiting for it and not kept.
 */

/** Most bytes of rendered bodies kept. */
export const PUSH_BODIES_MAX_BYTES = 32 * 1024 * 1024;

interface Entry {
  body: Promise<Buffer>;
  /** Its size once rendered; 0 while pending. */
  bytes: number;
}

export class PushBodies {
  /** By task id, then by the rest of the key. */
  readonly #byTask = new Map<string, Map<string, Entry>>();
  /** Every kept key in least-recently-used order, as `[taskId, key]`. */
  readonly #order = new Map<string, [string, string]>();
  #bytes = 0;
  #chain: Promise<unknown> = Promise.resolve();
  /** Bodies rendered since start (the seam tests count). */
  rendered = 0;

  constructor(private readonly maxBytes = PUSH_BODIES_MAX_BYTES) {}

  /**
   * The body under `key` for task `taskId`: kept, being rendered, or rendered now in its own turn.
   * @param render builds the body (a task view and its JSON); its error rejects every waiter
   * @param onRender called when a render starts (a metric)
   */
  body(taskId: string, key: string, render: () => Buffer, onRender?: () => void): Promise<Buffer> {
    let ofTask = this.#byTask.get(taskId);
    const kept = ofTask?.get(key);
    const orderKey = `${taskId}\0${key}`;
    if (kept) {
      this.#order.delete(orderKey);
      this.#order.set(orderKey, [taskId, key]);
      return kept.body;
    }
    const body = this.#chain
      .then(() => nextTurn())
      .then(() => {
        this.rendered++;
        onRender?.();
        return render();
      });
    this.#chain = body.catch(() => undefined);
    const entry: Entry = { body, bytes: 0 };
    if (!ofTask) this.#byTask.set(taskId, (ofTask = new Map<string, Entry>()));
    ofTask.set(key, entry);
    this.#order.set(orderKey, [taskId, key]);
    body.then(
      (b) => {
        if (this.#byTask.get(taskId)?.get(key) !== entry) return;
        if (b.length > this.maxBytes) return this.#drop(taskId, key); // its waiters have it; the others stay
        entry.bytes = b.length;
        this.#bytes += b.length;
        this.#evict();
      },
      () => this.#drop(taskId, key),
    );
    return body;
  }

  /** A committed change of `taskId`: its bodies are no longer the task's. */
  changed(taskId: string): void {
    for (const key of [...(this.#byTask.get(taskId)?.keys() ?? [])]) this.#drop(taskId, key);
  }

  /** Bytes of the bodies kept now. */
  get bytes(): number {
    return this.#bytes;
  }

  #evict(): void {
    for (const [orderKey, [taskId, key]] of this.#order) {
      if (this.#bytes <= this.maxBytes) return;
      if (this.#byTask.get(taskId)?.get(key)?.bytes === 0) continue; // pending: its waiters hold it
      this.#order.delete(orderKey);
      this.#drop(taskId, key);
    }
  }

  #drop(taskId: string, key: string): void {
    const ofTask = this.#byTask.get(taskId);
    const e = ofTask?.get(key);
    if (!ofTask || !e) return;
    ofTask.delete(key);
    if (ofTask.size === 0) this.#byTask.delete(taskId);
    this.#order.delete(`${taskId}\0${key}`);
    this.#bytes -= e.bytes;
  }
}
