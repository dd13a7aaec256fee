import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loopbackGet, MAX_PROBE_BODY_BYTES } from '../../../src/cli/loopback-get.js';
import { freePort } from '../../helpers/free-port.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
});

async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  server = createServer(handler);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/health`;
}

describe('loopbackGet (the CLI probe of /health)', () => {
  it('returns the status and the whole body, and sends the headers given', async () => {
    let seen = '';
    const url = await serve((req, res) => {
      seen = String(req.headers.authorization);
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"ok":false}');
    });
    const got = await loopbackGet(url, { authorization: 'Bearer x' }, 5_000);
    expect(got.status).toBe(503);
    expect(got.body?.toString()).toBe('{"ok":false}');
    expect(seen).toBe('Bearer x');
  });

  it('stops reading a body over MAX_PROBE_BODY_BYTES and returns no body', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200);
      // More than the cap, and never ended: the probe must not wait for an end that never comes.
      res.write(Buffer.alloc(MAX_PROBE_BODY_BYTES + 1, 0x20));
    });
    const got = await loopbackGet(url, {}, 60_000);
    expect(got.status).toBe(200);
    expect(got.body).toBeNull();
  });

  it('rejects with the socket error code when nothing listens', async () => {
    const port = await freePort();
    await expect(loopbackGet(`http://127.0.0.1:${port}/health`, {}, 5_000)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it("rejects with a TimeoutError when the answer's head does not come in time", async () => {
    const url = await serve(() => undefined);
    await expect(loopbackGet(url, {}, 50)).rejects.toMatchObject({ name: 'TimeoutError', message: 'no answer within 50 ms' });
  });
});
