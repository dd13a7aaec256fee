import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { stopController, stopServer } from '../../../src/a2a/shutdown.js';

/**
 * stopServer (src/a2a/shutdown.ts) on a node:http server: an answer under way when the stop
 * begins is written whole and its connection closed at once; one that does not end within the
 * grace is cut. The streams' part is test/integration/cli/serve-stop-streams.test.ts.
 */
const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.closeAllConnections();
});

/** A server whose every request waits until `answer` is called for it; resolves once it listens. */
async function pending(): Promise<{ server: Server; url: string; arrived: Promise<ServerResponse> }> {
  let arrive!: (res: ServerResponse) => void;
  const arrived = new Promise<ServerResponse>((r) => (arrive = r));
  const server = createServer((_req: IncomingMessage, res: ServerResponse) => arrive(res));
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, arrived };
}

describe('stopServer', () => {
  it('lets an answer under way end whole, then closes its connection without waiting out the keep-alive timeout', async () => {
    const { server, url, arrived } = await pending();
    // Far beyond the test's timeout: the stop resolves only if it does not wait for it.
    server.keepAliveTimeout = 600_000;
    const answer = fetch(url).then((r) => r.text());
    const res = await arrived;
    const stopping = stopController();
    const stopped = stopServer(server, stopping, 0, 600_000);
    expect(stopping.signal.aborted).toBe(true);
    res.end('the whole answer');
    expect(await answer).toBe('the whole answer');
    expect(await stopped).toEqual({ streamsEnded: 0, connectionsCut: 0 });
    expect(server.listening).toBe(false);
  });

  it('cuts an answer that has not ended after the grace, and says so', async () => {
    const { server, url, arrived } = await pending();
    const answer = fetch(url).then(
      (r) => r.text(),
      (err: unknown) => err,
    );
    await arrived;
    expect(await stopServer(server, stopController(), 2, 1)).toEqual({ streamsEnded: 2, connectionsCut: 1 });
    expect(await answer).toBeInstanceOf(TypeError);
  });
});
