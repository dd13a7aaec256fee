import { setMaxListeners } from 'node:events';
import type { Server } from 'node:http';

/**
 * How long a stopping server waits for the answers under way, in ms, before it cuts their
 * connections: well below `a2a-mailbridge stop`'s wait for the process (STOP_WAIT_MS, 15 s,
 * src/cli/stop.ts), which also covers the store's close after it.
 */
export const STOP_GRACE_MS = 5_000;

/**
 * The controller a server aborts when it stops ({@link stopServer}); each open stream listens on
 * its signal (src/a2a/sse.ts), so it takes any number of listeners without node's warning at 11.
 */
export function stopController(): AbortController {
  const c = new AbortController();
  setMaxListeners(0, c.signal);
  return c;
}

/** What stopping the server came to. */
export interface ServerStopped {
  /** Streams open when the stop began, each ended with its closing comment (src/a2a/sse.ts). */
  streamsEnded: number;
  /** Connections still open after the grace, cut then (an answer that did not end in time, a client that does not read). */
  connectionsCut: number;
}

/**
 * Stops `server` the way docs/streaming.md ("When the bridge stops") describes: it stops accepting
 * connections and closes the idle ones (`server.close()`); aborts `stopping`, on which every open
 * stream writes an SSE comment and ends its response (a whole chunked body, so a client reads
 * EOF and may subscribe again: no task event is made up, as a stop is not a change of the task);
 * lets every answer under way end, closing its connection as soon as it has (the keep-alive
 * timeout drops to 1 ms, so a finished answer's socket does not wait the usual 5 s); and after
 * `graceMs` cuts the connections left.
 *
 * @param streamsOpen the streams open now (StreamLimiter.size), for the summary
 * @param graceMs the wait for the answers under way, in ms ({@link STOP_GRACE_MS})
 * @returns once every connection is closed; never rejects
 */
export function stopServer(server: Server, stopping: AbortController, streamsOpen: number, graceMs = STOP_GRACE_MS): Promise<ServerStopped> {
  return new Promise((resolve) => {
    let connectionsCut = 0;
    const grace = setTimeout(() => {
      server.getConnections((_err, n) => {
        connectionsCut = n;
        server.closeAllConnections();
      });
    }, graceMs);
    server.close(() => {
      clearTimeout(grace);
      resolve({ streamsEnded: streamsOpen, connectionsCut });
    });
    // Applied by node:http when an answer ends (its socket then idles for this long before it is
    // closed); 0 would mean never. The buffer node adds to it (1 s on Node 26) is dropped too.
    server.keepAliveTimeout = 1;
    server.keepAliveTimeoutBuffer = 0;
    stopping.abort();
  });
}
