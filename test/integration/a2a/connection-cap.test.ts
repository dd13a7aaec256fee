/**
 * The server's connection cap (`server.max_connections`, node:http `maxConnections`; src/a2a/server.ts):
 * a local process holding idle sockets up to the cap gets the next one closed at accept, and the
 * bridge keeps answering once a socket is let go. Raw node:net sockets; every wait is on an event.
 */
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { useHarness } from '../../helpers/bridge-harness.js';

const CAP = 4;
const suite = useHarness({ serverToml: `max_connections = ${CAP}`, mailboxToml: 'check_interval_s = 3600' });

describe('server.max_connections', () => {
  it('idle sockets fill the cap: the next is closed at accept with no answer; once one is let go, /health answers', async () => {
    const { h } = suite;
    const server = h.app.server.server;
    const port = Number(new URL(h.endpoint).port);
    /** Opens a socket; resolves with the server's side when accepted, or null when dropped at the cap. */
    const open = async (): Promise<{ client: Socket; serverSide: Socket | null }> => {
      const client = connect(port, '127.0.0.1');
      const outcome = new Promise<Socket | null>((resolve) => {
        const onConnection = (sock: Socket): void => {
          if (sock.remotePort !== client.localPort) return;
          done();
          resolve(sock);
        };
        const onDrop = (): void => {
          done();
          resolve(null);
        };
        const done = (): void => {
          server.off('connection', onConnection);
          server.off('drop', onDrop);
        };
        server.on('connection', onConnection);
        server.on('drop', onDrop);
      });
      await once(client, 'connect');
      return { client, serverSide: await outcome };
    };
    const held: { client: Socket; serverSide: Socket }[] = [];
    let dropped: Socket | null = null;
    for (let i = 0; i <= CAP && !dropped; i++) {
      const o = await open();
      if (o.serverSide) held.push({ client: o.client, serverSide: o.serverSide });
      else dropped = o.client;
    }
    expect(dropped).not.toBeNull();
    expect(held.length).toBeLessThanOrEqual(CAP);
    const received: Buffer[] = [];
    dropped!.on('data', (d: Buffer) => received.push(d));
    dropped!.on('error', () => {});
    if (!dropped!.destroyed) await once(dropped!, 'close');
    expect(Buffer.concat(received).length).toBe(0);

    const closed = once(held[0]!.serverSide, 'close');
    held[0]!.client.destroy();
    await closed;
    const res = await fetch(`http://127.0.0.1:${port}/health`, { headers: { connection: 'close' } });
    expect(res.status).toBe(200);
    for (const s of held) s.client.destroy();
  });
});
