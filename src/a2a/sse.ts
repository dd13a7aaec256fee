import type { ServerResponse } from 'node:http';
import { once } from 'node:events';
import { monotonicMs } from '../monotonic.js';
import { JsonText } from './call.js';

/**
 * Server-sent events (WHATWG HTML §9.2, `text/event-stream`) for the streaming methods: each event
 * is one `data:` line of JSON and a blank line (JSON.stringify never emits a line break, so one
 * line always carries one whole event); a comment line (`: keep-alive`) is written whenever the
 * stream has been quiet for `keepAliveMs`, so proxies and clients that cut idle connections keep
 * a long stream (A2A v1.0 §9.4.2 for the JSON-RPC form, §11.7 for HTTP+JSON).
 */

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  connection: 'keep-alive',
  // nginx and similar proxies buffer responses unless told not to.
  'x-accel-buffering': 'no',
} as const;

/** An event's JSON text as it is (HTTP+JSON streams carry the bare StreamResponse): a {@link JsonText} as made, anything else serialised. */
export function eventText(event: unknown): string {
  return event instanceof JsonText ? event.text : JSON.stringify(event);
}

export interface SseOptions {
  keepAliveMs: number;
  /** Aborted when the client goes away; the caller's iterator is then ended (its `return`). */
  abort: AbortController;
  /**
   * Aborted when the server stops (src/a2a/shutdown.ts): `abort` is aborted too (the events end
   * after those already queued), then {@link STOP_COMMENT} is written and the response ends.
   */
  stopping?: AbortSignal;
}

/**
 * The last line of a stream the bridge's stop ended (docs/streaming.md, "When the bridge stops"):
 * an SSE comment, which clients skip (WHATWG HTML §9.2.6), so no task event is made up; the
 * client reads the end of the body and may subscribe again.
 */
export const STOP_COMMENT = ': the bridge is stopping; subscribe again once it runs\n\n';

/**
 * Writes `events` as SSE until they end or the client goes away, honouring back-pressure (a slow
 * reader makes the writer wait, never the process buffer without bound), then ends the response.
 * An error the iterator throws mid-stream is written as the event `onError` renders, then the
 * stream ends. When `o.stopping` is aborted (now or later), the events end and the stream closes
 * with {@link STOP_COMMENT}.
 *
 * @param frame an event's text on the wire (one JSON value): a {@link JsonText} event is rendered
 *   once and shared by every stream that writes it (src/a2a/methods-stream.ts), so `frame` should
 *   splice it in (src/a2a/jsonrpc.ts resultText, {@link eventText}) rather than serialise it again
 * @returns how many events were written
 */
export async function writeSse(
  res: ServerResponse,
  events: AsyncIterable<unknown>,
  frame: (event: unknown) => string,
  onError: (err: unknown) => unknown,
  o: SseOptions,
): Promise<number> {
  res.writeHead(200, SSE_HEADERS);
  res.flushHeaders();
  // The response's 'close' comes when the connection goes (the client left) or after res.end().
  const gone = (): void => o.abort.abort(new Error('the client closed the stream'));
  res.on('close', gone);
  let lastWrite = monotonicMs();
  const write = async (text: string): Promise<void> => {
    lastWrite = monotonicMs();
    if (!res.write(text) && !res.destroyed) await Promise.race([once(res, 'drain'), once(res, 'close')]);
  };
  const keepAlive = setInterval(() => {
    if (monotonicMs() - lastWrite >= o.keepAliveMs * 0.9 && !res.destroyed) void write(': keep-alive\n\n');
  }, Math.max(50, Math.floor(o.keepAliveMs / 2)));
  let stopped = false;
  const stop = (): void => {
    stopped = true;
    o.abort.abort(new Error('the bridge is stopping'));
  };
  if (o.stopping?.aborted) stop();
  else o.stopping?.addEventListener('abort', stop, { once: true });
  let n = 0;
  const it = events[Symbol.asyncIterator]();
  try {
    for (;;) {
      const r = await it.next();
      if (r.done || res.destroyed) break;
      await write(`data: ${frame(r.value)}\n\n`);
      n += 1;
    }
  } catch (err) {
    if (!res.destroyed) await write(`data: ${JSON.stringify(onError(err))}\n\n`);
  } finally {
    clearInterval(keepAlive);
    res.off('close', gone);
    o.stopping?.removeEventListener('abort', stop);
    await it.return?.();
    if (stopped && !res.destroyed) await write(STOP_COMMENT);
    if (!res.destroyed) res.end();
  }
  return n;
}
