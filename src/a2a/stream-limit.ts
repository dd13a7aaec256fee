/**
 * The cap on open streams per caller (`server.max_streams_per_caller`; docs/streaming.md): a stream
 * holds a socket, a listener on the task events and the watcher on demand for as long as it is
 * open. At the cap, a new stream closes the caller's oldest one rather than being refused: a stream
 * never holds the task's state (a client whose stream ends without a final event subscribes again
 * or polls and loses nothing), so streams a client left open and never reads cannot lock the
 * caller out of streaming. The caller is the credential it presented (every caller of this bridge
 * shares the one bearer today, so the cap is the bridge's; the key keeps it per caller should
 * callers get credentials of their own).
 */
export class StreamLimiter {
  /** Per caller, its open streams, oldest first: how to close each. */
  readonly #open = new Map<string, { close: () => void }[]>();
  #closedAtCap = 0;

  constructor(private readonly max: number) {}

  /**
   * Counts one more open stream for `key`; when `key` already holds `max`, its oldest is closed
   * (`close` of that stream is called, and it no longer counts).
   * @param close ends this stream early (its events end without a final one)
   * @returns the release (call it when the stream ends; a second call, or one after the stream was
   *   closed at the cap, does nothing)
   */
  open(key: string, close: () => void): () => void {
    const list = this.#open.get(key) ?? [];
    this.#open.set(key, list);
    while (list.length >= this.max) {
      list.shift()!.close();
      this.#closedAtCap += 1;
    }
    const entry = { close };
    list.push(entry);
    return () => {
      const i = list.indexOf(entry);
      if (i >= 0) list.splice(i, 1);
      if (list.length === 0 && this.#open.get(key) === list) this.#open.delete(key);
    };
  }

  /** Streams open now, over all callers. */
  get size(): number {
    let n = 0;
    for (const v of this.#open.values()) n += v.length;
    return n;
  }

  /** Streams closed because their caller opened one more at the cap, since start. */
  get closedAtCap(): number {
    return this.#closedAtCap;
  }
}
