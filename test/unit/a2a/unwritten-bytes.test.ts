/**
 * The connection cap's bound on the bytes of answers not yet written out (src/a2a/connection-cap.ts,
 * `MAX_UNWRITTEN_BYTES`, `MAX_UNWRITTEN_TOTAL_BYTES`): a node:http server with the bridge's
 * DoorResponse and cap, answering every request with a large body, and raw sockets that pipeline
 * requests and never read. Counted by answers alone, each such socket had 32 answers built and held.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { capConnections, MAX_UNWRITTEN_ANSWERS, type UnwrittenLimits } from '../../../src/a2a/connection-cap.js';
import { answerBytesOf, DoorResponse } from '../../../src/a2a/door-response.js';
import { createLogger } from '../../../src/log.js';

const MIB = 1024 * 1024;
/** Each answer's body: large enough that the kernel's loopback buffers hold only a few. */
const BODY = Buffer.alloc(4 * MIB, 0x61);
/** An answer larger than what the kernel's loopback buffers of one socket take (a few MiB each way): most of it stays unwritten while the client does not read. */
const HUGE = Buffer.alloc(32 * MIB, 0x62);
/** Pipelined requests per socket: more than the cap on answers, so a cap by count alone builds exactly that many. */
const PIPELINED = MAX_UNWRITTEN_ANSWERS + 8;

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
});

/**
 * A server whose every answer is {@link BODY}; `built()`: how many answers were begun per socket,
 * in order of first request; `closed(n)`: resolves once `n` of its sockets have closed (a client
 * that never reads never sees the close itself: the answers queued ahead of the FIN are unread).
 */
async function bigServer(
  limits: UnwrittenLimits,
  o: { later?: boolean } = {},
): Promise<{ port: number; built: () => number[]; queued: () => number; closed: (n: number) => Promise<void>; closedCount: () => number }> {
  const perSocket = new Map<Socket, number>();
  let queued = 0;
  let closedCount = 0;
  const waiting: { n: number; resolve: () => void }[] = [];
  server = createServer({ ServerResponse: DoorResponse }, (req, res) => {
    if (req.socket.destroyed) return void req.destroy();
    perSocket.set(req.socket, (perSocket.get(req.socket) ?? 0) + 1);
    const answer = (): void => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(req.url === '/small' ? 'ok' : req.url === '/huge' || req.url === '/after-close' ? HUGE : BODY);
      // An answer the cap refused is not queued (door-response.ts sets its bytes to 0).
      if (answerBytesOf(res) > 0) queued += 1;
    };
    // A call whose handler ends its answer after the client has gone (a turn after the close).
    if (req.url === '/after-close') return void res.once('close', () => setImmediate(answer));
    // `later`: answered a turn after the request, as a call whose handler waits is, so every request of a chunk begins before any answer ends.
    if (o.later) setImmediate(answer);
    else answer();
  });
  server.on('connection', (socket: Socket) =>
    socket.once('close', () => {
      closedCount += 1;
      for (const w of waiting) if (closedCount >= w.n) w.resolve();
    }),
  );
  capConnections(server, 16, createLogger('silent'), 60_000, Date.now, limits);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const closed = (n: number): Promise<void> => new Promise((resolve) => (closedCount >= n ? resolve() : waiting.push({ n, resolve })));
  return { port: (server.address() as AddressInfo).port, built: () => [...perSocket.values()], queued: () => queued, closed, closedCount: () => closedCount };
}

/** A socket that writes `n` GETs of `path` at once and never reads (destroyed by the test's end). */
async function pipelineUnread(port: number, n = PIPELINED, path = '/'): Promise<Socket> {
  const s = connect(port, '127.0.0.1');
  s.on('error', () => {});
  await once(s, 'connect');
  s.pause();
  s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`.repeat(n));
  return s;
}

const clients: Socket[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.destroy();
});

describe('answers not yet written out, by bytes', () => {
  it('a socket that pipelines requests for large answers and never reads is closed once it holds the per-socket bytes, long before the count cap', async () => {
    const { port, built, closed } = await bigServer({ answers: MAX_UNWRITTEN_ANSWERS, bytes: 8 * MIB, totalBytes: 1024 * MIB });
    clients.push(await pipelineUnread(port));
    await closed(1);
    const [n] = built();
    // The kernel's loopback buffers take a few answers whole; past them, 8 MiB is two answers.
    expect(n).toBeGreaterThan(1);
    expect(n).toBeLessThan(MAX_UNWRITTEN_ANSWERS);
  });

  it('answers that end after every pipelined request of the chunk began are not queued past the per-socket bytes', async () => {
    const { port, queued, closed } = await bigServer({ answers: MAX_UNWRITTEN_ANSWERS, bytes: 8 * MIB, totalBytes: 1024 * MIB }, { later: true });
    // Fewer than the cap on answers: only the bytes can close it.
    clients.push(await pipelineUnread(port, MAX_UNWRITTEN_ANSWERS - 12));
    await closed(1);
    // The first answer goes whatever its size; then 8 MiB is one more 4 MiB answer (its socket's buffers took none yet).
    expect(queued()).toBeGreaterThan(0);
    expect(queued()).toBeLessThanOrEqual(3);
  });

  it("sockets that each hold one unread answer are closed, those that have held theirs longest first, once the server's sockets together hold the total (attack review 5)", async () => {
    const { port, closed } = await bigServer({ answers: MAX_UNWRITTEN_ANSWERS, bytes: 1024 * MIB, totalBytes: 48 * MIB });
    for (let i = 0; i < 5; i++) clients.push(await pipelineUnread(port, 1, '/huge'));
    // 5 answers of 32 MiB, each mostly unwritten: at most one more than the total holds stays.
    await closed(3);
  });

  it("a caller that reads is not closed for the unread answers other sockets hold (attack review 5: the total closed it, and the log blamed it)", async () => {
    const { port, built } = await bigServer({ answers: MAX_UNWRITTEN_ANSWERS, bytes: 1024 * MIB, totalBytes: 48 * MIB });
    for (let i = 0; i < 2; i++) clients.push(await pipelineUnread(port, 1, '/huge'));
    while (built().length < 2) await new Promise((r) => setImmediate(r));
    const victim = connect(port, '127.0.0.1');
    clients.push(victim);
    await once(victim, 'connect');
    let text = '';
    victim.on('data', (d: Buffer) => (text += d.toString('latin1')));
    victim.write('GET /small HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /small HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    await once(victim, 'close');
    expect(text.match(/HTTP\/1\.1 200 /g)).toHaveLength(2);
  });

  it("an answer ended after its client went away never counts in the server's total (it stayed there for good: the total then closed sockets for bytes no socket held)", async () => {
    const { port, built, closed, closedCount } = await bigServer({ answers: MAX_UNWRITTEN_ANSWERS, bytes: 1024 * MIB, totalBytes: 48 * MIB });
    const gone = connect(port, '127.0.0.1');
    await once(gone, 'connect');
    gone.write('GET /after-close HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    while (built().length < 1) await new Promise((r) => setImmediate(r));
    gone.destroy();
    await closed(1);
    // Its 32 MiB answer ends a turn after the close; let it.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    clients.push(await pipelineUnread(port, 1, '/huge'));
    const reader = connect(port, '127.0.0.1');
    clients.push(reader);
    await once(reader, 'connect');
    let text = '';
    reader.on('data', (d: Buffer) => (text += d.toString('latin1')));
    reader.write('GET /small HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    await once(reader, 'close');
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    // 32 MiB unread on one socket is within 48 MiB: only the first socket (its client gone) has closed.
    expect(closedCount()).toBe(2);
  });

  it('a client that reads, pipelining two requests at a time, is served every answer under the same limits', async () => {
    const { port } = await bigServer({ answers: MAX_UNWRITTEN_ANSWERS, bytes: 8 * MIB, totalBytes: 16 * MIB });
    const s = connect(port, '127.0.0.1');
    clients.push(s);
    await once(s, 'connect');
    let bytes = 0;
    let want = 0;
    let reached: (() => void) | undefined;
    s.on('data', (d: Buffer) => {
      bytes += d.length;
      if (bytes >= want) reached?.();
    });
    const get = `GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
    for (let round = 1; round <= 4; round++) {
      want = round * 2 * BODY.length;
      const got = new Promise<void>((r) => (reached = r));
      s.write(get + get);
      await got;
    }
    expect(s.destroyed).toBe(false);
    expect(bytes).toBeGreaterThanOrEqual(8 * BODY.length);
  });
});
