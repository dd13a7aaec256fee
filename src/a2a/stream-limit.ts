import { A2AError } from './errors.js';

/**
 * The cap on open streams per caller (`server.max_streams_per_caller`): a stream holds a socket, a
 * listener on the task events and the watcher on demand for as long as it is open, so a caller
 * that opens streams and never reads them cannot exhaust the bridge. The caller is the credential
 * it presented (every caller of this bridge shares the one bearer today, so the cap is the
 * bridge's; the key keeps it per caller should callers get credentials of their own).
 */
export class StreamLimiter {
  readonly #open = new Map<string, number>();

  constructor(private readonly max: number) {}

  /**
   * Counts one more open stream for `key`.
   * @returns the release (call it once, when the stream ends)
   * @throws A2AError limitReached when `key` already holds `max` streams
   */
  open(key: string): () => void {
    const n = this.#open.get(key) ?? 0;
    if (n >= this.max) {
      throw new A2AError(
        'limitReached',
        `${this.max} streams are already open for this caller (server.max_streams_per_caller = ${this.max}); close one, or poll with GetTask`,
        { limit: 'server.max_streams_per_caller', value: String(this.max) },
        1,
      );
    }
    this.#open.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#open.get(key) ?? 1) - 1;
      if (left <= 0) this.#open.delete(key);
      else this.#open.set(key, left);
    };
  }

  /** Streams open now, over all callers. */
  get size(): number {
    let n = 0;
    for (const v of this.#open.values()) n += v;
    return n;
  }
}
