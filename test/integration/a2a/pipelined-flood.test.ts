/**
 * Pipelined requests whose answers are not read (src/a2a/connection-cap.ts,
 * `MAX_UNWRITTEN_ANSWERS`; docs/architecture.md "Operating"). node:http parses every request of a
 * chunk it read before it pauses a socket whose answers are not read, and queues each answer in
 * memory: a local process that pipelines card GETs on many sockets and never reads made the
 * bridge build hundreds of answers per socket in one event-loop turn. Raw node:net sockets on
 * loopback; every wait is on an event.
 */
import { once } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { MAX_UNWRITTEN_ANSWERS } from '../../../src/a2a/connection-cap.js';
import { useHarness } from '../../helpers/bridge-harness.js';
import { TEST_BEARER } from '../../helpers/config-dir.js';

const CAP = 8;
const suite = useHarness({ serverToml: `max_connections = ${CAP}`, mailboxToml: 'check_interval_s = 3600' });

/** Pipelined card GETs one socket writes at once: ~33 KB, one read of the server's. */
const PIPELINED = 400;

function rig() {
  const server: Server = suite.h.app.server.server;
  const url = new URL(suite.h.endpoint);
  const port = Number(url.port);
  const card = (close = false): string => `GET ${url.pathname}/.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${close ? 'Connection: close\r\n' : ''}\r\n`;
  const open = async (): Promise<Socket> => {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => {});
    await once(s, 'connect');
    return s;
  };
  /** Everything `s` reads until it closes. */
  const readAll = (s: Socket): Promise<string> => {
    const chunks: Buffer[] = [];
    s.on('data', (d: Buffer) => chunks.push(d));
    return new Promise((resolve) => s.once('close', () => resolve(Buffer.concat(chunks).toString('utf8'))));
  };
  /** Resolves once `s` has read `n` answers (status lines) more than it had when called. */
  const answers = (s: Socket, n: number): Promise<string> =>
    new Promise((resolve) => {
      let seen = '';
      const onData = (d: Buffer): void => {
        seen += d.toString('latin1');
        if ((seen.match(/HTTP\/1\.1 \d{3} /g) ?? []).length < n) return;
        s.off('data', onData);
        resolve(seen);
      };
      s.on('data', onData);
    });
  /** One GetTask on a new connection with the bearer, as a caller that keeps no connection alive: its answer's text. */
  const callFresh = async (): Promise<string> => {
    const s = await open();
    const read = readAll(s);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: '00000000-0000-0000-0000-000000000000' } });
    s.write(
      `POST ${url.pathname} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${TEST_BEARER}\r\nContent-Type: application/json\r\n` +
        `A2A-Version: 1.0\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    return read;
  };
  return { server, card, open, answers, callFresh };
}

describe('pipelined requests whose answers are not read', () => {
  it(`${2 * CAP} sockets one after another, each pipelining ${PIPELINED} card GETs and reading nothing: each is closed when its answer ${MAX_UNWRITTEN_ANSWERS + 1} begins, with no more answers built, and a caller on a new connection is answered`, async () => {
    const r = rig();
    /** The flooding socket of the moment (its client's port), what the server did with its requests, and when that is known. */
    let flooder = 0;
    let count = { requests: 0, built: 0 };
    let settled: (() => void) | undefined;
    let side: Socket | undefined;
    // Added after the bridge's own listener: runs once the bridge's handler answered (a card: in the same turn) or built nothing.
    const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
      const s = req.socket;
      if (s.remotePort !== flooder) return;
      if (count.requests === 0) {
        side = s;
        s.once('close', () => settled?.());
      }
      count.requests += 1;
      if (res.writableEnded) count.built += 1;
      // The defect: every request of the chunk answered and the socket kept (node:http paused it).
      if (count.requests === PIPELINED && !s.destroyed) settled?.();
    };
    r.server.on('request', onRequest);
    const results: { built: number; closed: boolean }[] = [];
    const clients: Socket[] = [];
    try {
      for (let i = 0; i < 2 * CAP; i++) {
        const s = await r.open();
        s.pause();
        clients.push(s);
        flooder = s.localPort!;
        count = { requests: 0, built: 0 };
        const known = new Promise<void>((resolve) => (settled = resolve));
        s.write(r.card().repeat(PIPELINED));
        await known;
        results.push({ built: count.built, closed: side!.destroyed });
      }
      const answer = await r.callFresh();
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      expect(answer).toContain('"jsonrpc":"2.0"');
    } finally {
      r.server.off('request', onRequest);
      for (const s of clients) s.destroy();
    }
    expect(results).toEqual(Array.from({ length: 2 * CAP }, () => ({ built: MAX_UNWRITTEN_ANSWERS, closed: true })));
  });

  it(`a client that pipelines ${MAX_UNWRITTEN_ANSWERS} requests at once and reads the answers is served, three times on one connection`, async () => {
    const r = rig();
    const s = await r.open();
    for (let round = 0; round < 3; round++) {
      const got = r.answers(s, MAX_UNWRITTEN_ANSWERS);
      s.write(r.card().repeat(MAX_UNWRITTEN_ANSWERS - 1) + r.card(round === 2));
      const text = await got;
      expect((text.match(/HTTP\/1\.1 200 /g) ?? []).length).toBe(MAX_UNWRITTEN_ANSWERS);
    }
    await once(s, 'close');
  });
});
