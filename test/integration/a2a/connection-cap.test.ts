/**
 * The server's connection cap (`server.max_connections`; src/a2a/connection-cap.ts,
 * docs/architecture.md "Operating"): at the cap a new connection evicts a waiting socket (one that
 * never presented the bearer first, the longest-waiting first), never a busy one (a request whose
 * head arrived and whose answer is not ended, a stream), and is closed itself only when every
 * socket is busy. Raw node:net sockets on loopback; every wait is on an event.
 */
import { once } from 'node:events';
import type { Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { useHarness } from '../../helpers/bridge-harness.js';
import { TEST_BEARER } from '../../helpers/config-dir.js';

const CAP = 8;
const suite = useHarness({ serverToml: `max_connections = ${CAP}`, mailboxToml: 'check_interval_s = 3600' });

/** A socket of the test and the server's side of it. */
interface Held {
  client: Socket;
  serverSide: Socket;
}

/** What a socket read: the status of the first answer (0 before a whole status line) and all the bytes. */
interface Read {
  status: number;
  text: string;
}

/**
 * Resolves when `s` is closed (at once if it is destroyed already); its 'error' (the server's
 * parser on a head cut short by the client) is no failure here, unlike with `once`.
 */
function closed(s: Socket | undefined): Promise<void> {
  return !s || s.destroyed ? Promise.resolve() : new Promise((resolve) => s.once('close', () => resolve()));
}

const getTask = (id: string) => ({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id } });

/** The rig of one test: the server, its port, and the server's side of each socket by the client's port. */
function rig() {
  const server: Server = suite.h.app.server.server;
  const port = Number(new URL(suite.h.endpoint).port);
  const path = new URL(suite.h.endpoint).pathname;
  const sides = new Map<number, Socket>();
  const waiting = new Map<number, (s: Socket) => void>();
  /** Every socket the test opened, closed after it (`end`) whether it passed or not. */
  const opened: Socket[] = [];
  const onConnection = (s: Socket): void => {
    sides.set(s.remotePort!, s);
    waiting.get(s.remotePort!)?.(s);
  };
  server.on('connection', onConnection);

  /** The server's side of `client` once accepted ('connection'); destroyed when the cap closed it at accept. */
  const serverSideOf = (client: Socket): Promise<Socket> =>
    new Promise((resolve) => {
      const known = sides.get(client.localPort!);
      if (known) return resolve(known);
      waiting.set(client.localPort!, resolve);
    });

  /** Opens a socket, writes `first` (if any) once connected, and resolves when the server accepted it. */
  const open = async (first?: string): Promise<Held> => {
    const client = connect(port, '127.0.0.1');
    opened.push(client);
    client.on('error', () => {});
    await once(client, 'connect');
    if (first) client.write(first);
    return { client, serverSide: await serverSideOf(client) };
  };

  /** Everything `client` reads until it closes. */
  const readAll = (client: Socket): Promise<Read> => {
    const chunks: Buffer[] = [];
    client.on('data', (d: Buffer) => chunks.push(d));
    return new Promise((resolve) => {
      const done = (): void => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text });
      };
      if (client.destroyed) done();
      else client.once('close', done);
    });
  };

  /** The head and body of a JSON-RPC POST with the bearer; `length` overrides Content-Length (a body still on its way). */
  const rpcRequest = (body: unknown, o: { close?: boolean; length?: number } = {}): { head: string; body: string } => {
    const text = JSON.stringify(body);
    const head =
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${TEST_BEARER}\r\nContent-Type: application/json\r\n` +
      `A2A-Version: 1.0\r\nContent-Length: ${o.length ?? Buffer.byteLength(text)}\r\n${o.close === false ? '' : 'Connection: close\r\n'}\r\n`;
    return { head, body: text };
  };

  /**
   * One JSON-RPC call on a new connection (`Connection: close`) as a caller that keeps no
   * connection alive makes it; resolves once the server's side is closed too, so the next step
   * starts from a known count. Status 0: the connection closed with no answer.
   */
  const callFresh = async (body: unknown): Promise<Read & { serverSide: Socket | undefined }> => {
    const client = connect(port, '127.0.0.1');
    opened.push(client);
    client.on('error', () => {});
    const read = readAll(client);
    await once(client, 'connect');
    const r = rpcRequest(body);
    client.write(r.head + r.body);
    const answer = await read;
    const serverSide = sides.get(client.localPort!);
    await closed(serverSide);
    return { ...answer, serverSide };
  };

  /** A socket that sent a head with the bearer and half its body: its answer is begun and not ended (busy). */
  const inFlight = async (taskId: string): Promise<Held & { rest: string }> => {
    const r = rpcRequest({ jsonrpc: '2.0', id: 'slow', method: 'GetTask', params: { id: taskId } }, { close: false });
    const held = await open();
    const begun = new Promise<void>((resolve) => {
      const onRequest = (req: { socket: Socket }): void => {
        if (req.socket !== held.serverSide) return;
        server.off('request', onRequest);
        resolve();
      };
      server.on('request', onRequest);
    });
    const half = Math.floor(r.body.length / 2);
    held.client.write(r.head + r.body.slice(0, half));
    await begun;
    return { ...held, rest: r.body.slice(half) };
  };

  /** A socket holding a SubscribeToTask stream open (busy); resolves once the first event arrived. */
  const stream = async (taskId: string): Promise<Held & { read: Promise<Read> }> => {
    const r = rpcRequest({ jsonrpc: '2.0', id: 'sub', method: 'SubscribeToTask', params: { id: taskId } }, { close: false });
    const held = await open();
    const read = readAll(held.client);
    const event = new Promise<void>((resolve) => {
      const onData = (d: Buffer): void => {
        if (!d.toString('utf8').includes('data: ')) return;
        held.client.off('data', onData);
        resolve();
      };
      held.client.on('data', onData);
    });
    held.client.write(r.head + r.body);
    await event;
    return { ...held, read };
  };

  /** Resolves when `held` has read an answer that names `text` (sent whole: the server ended it). */
  const answered = (held: Held, text: string): Promise<void> =>
    new Promise((resolve) => {
      let seen = '';
      const onData = (d: Buffer): void => {
        seen += d.toString('utf8');
        if (!seen.includes(text)) return;
        held.client.off('data', onData);
        resolve();
      };
      held.client.on('data', onData);
    });

  /** A caller's socket kept alive after a GetTask with the bearer was answered on it: waiting, and it presented the bearer. */
  const keptAlive = async (taskId: string): Promise<Held> => {
    const held = await open();
    const answer = answered(held, taskId);
    const req = rpcRequest(getTask(taskId), { close: false });
    held.client.write(req.head + req.body);
    await answer;
    return held;
  };

  /** A local process's socket: a partial request head with no bearer, as a slowloris sends it. */
  const partialHead = (): Promise<Held> => open(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-a: b\r\n`);

  /** The sockets the server holds. */
  const count = (): Promise<number> => new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));

  /** A fresh start: the harness client's kept-alive sockets closed, then none held. */
  const begin = async (): Promise<void> => {
    server.closeIdleConnections();
    expect(await count()).toBe(0);
  };

  /** Closes every socket the test opened and waits until the server let go of each. */
  const end = async (): Promise<void> => {
    const gone = opened.map((c) => closed(sides.get(c.localPort!)));
    for (const c of opened) c.destroy();
    await Promise.all(gone);
    server.off('connection', onConnection);
  };

  /** A task that stays open (no reply is mailed): GetTask finds it, SubscribeToTask streams it. */
  const openTask = async (): Promise<string> => {
    const sent = await callFresh({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { role: 'ROLE_USER', messageId: `m-${Math.random()}`, contextId: `ctx-${Math.random()}`, parts: [{ text: 'Survey RAG papers' }] } } });
    expect(sent.status).toBe(200);
    // The answer is chunked (transfer-coding): the task's id is read from its text.
    return /"task":\{"id":"([^"]+)"/.exec(sent.text)![1]!;
  };

  const r = { server, open, callFresh, inFlight, stream, partialHead, count, begin, end, openTask, readAll, answered, keptAlive };
  current = r;
  return r;
}

let current: ReturnType<typeof rig> | undefined;
afterEach(async () => {
  await current?.end();
  current = undefined;
});

describe('server.max_connections', () => {
  it('the cap full of partial heads from a local process (no bearer): a caller\'s GetTask on a new connection is answered 20 times of 20, each evicting the attacker socket that waited longest', async () => {
    const r = rig();
    await r.begin();
    const taskId = await r.openTask();
    const attackers: Held[] = [];
    for (let i = 0; i < CAP; i++) attackers.push(await r.partialHead());
    expect(await r.count()).toBe(CAP);
    let answered = 0;
    for (let i = 0; i < 20; i++) {
      const call = await r.callFresh(getTask(taskId));
      if (call.status !== 200 || !call.text.includes(taskId)) continue;
      answered += 1;
      // The eviction happened at accept, before the answer: the oldest attacker socket and no other.
      expect(attackers.map((a) => a.serverSide.destroyed)).toEqual([true, ...Array<boolean>(CAP - 1).fill(false)]);
      const evicted = attackers.shift()!;
      await closed(evicted.client);
      // The attacker reconnects at once, as the attack does: the cap is full again for the next caller.
      attackers.push(await r.partialHead());
      expect(await r.count()).toBe(CAP);
    }
    expect(answered).toBe(20);
  });

  it('busy sockets are never evicted, though they are the oldest: an open SubscribeToTask stream and a request whose body is on its way outlive 20 callers (a caller\'s kept-alive sockets go instead), and the request is answered when its body ends', async () => {
    const r = rig();
    await r.begin();
    const taskId = await r.openTask();
    const sub = await r.stream(taskId);
    const slow = await r.inFlight(taskId);
    const idle: Held[] = [];
    for (let i = 0; i < CAP - 2; i++) idle.push(await r.keptAlive(taskId));
    expect(await r.count()).toBe(CAP);
    let answered = 0;
    for (let i = 0; i < 20; i++) {
      const call = await r.callFresh(getTask(taskId));
      if (call.status === 200) answered += 1;
      expect([sub.serverSide.destroyed, slow.serverSide.destroyed]).toEqual([false, false]);
      // The kept-alive socket that waited longest went (or the server's keep-alive timeout took one): the cap is filled again.
      for (const [j, a] of idle.entries()) {
        if (!a.serverSide.destroyed) continue;
        await closed(a.client);
        idle[j] = await r.keptAlive(taskId);
      }
    }
    expect(answered).toBe(20);

    const slowAnswer = r.readAll(slow.client);
    slow.client.end(slow.rest);
    const got = await slowAnswer;
    expect(got.status).toBe(200);
    expect(got.text).toContain(taskId);
    expect(sub.client.destroyed).toBe(false);
  });

  it('every socket busy: a new connection is closed at accept with no answer; once an answer ends, its kept-alive socket (the bearer\'s) is evicted for the next caller', async () => {
    const r = rig();
    await r.begin();
    const taskId = await r.openTask();
    const busy: (Held & { rest: string })[] = [];
    for (let i = 0; i < CAP; i++) busy.push(await r.inFlight(taskId));
    expect(await r.count()).toBe(CAP);

    const refused = await r.callFresh(getTask(taskId));
    expect(refused.status).toBe(0);
    expect(refused.text).toBe('');
    expect(refused.serverSide?.destroyed).toBe(true);
    expect(busy.map((b) => b.serverSide.destroyed)).toEqual(Array<boolean>(CAP).fill(false));

    // The first request's body ends: it is answered, and its socket (kept alive) now waits.
    const first = busy[0]!;
    const answer = r.answered(first, taskId);
    first.client.write(first.rest);
    await answer;
    const call = await r.callFresh(getTask(taskId));
    expect(call.status).toBe(200);
    expect(busy.map((b) => b.serverSide.destroyed)).toEqual([true, ...Array<boolean>(CAP - 1).fill(false)]);
  });

  it('a connection that presented the bearer is known by that Authorization value only: on it, a wrong bearer or the right one with a byte more is 401; the right one with the scheme in lower case is 200 (src/a2a/connection-cap.ts, bearerShownBefore)', async () => {
    const r = rig();
    await r.begin();
    const taskId = await r.openTask();
    /** The status of a GetTask sent on `held` with this Authorization value (its answer names the task, or the 401's error). */
    const ask = async (held: Held, authorization: string): Promise<number> => {
      const text = JSON.stringify(getTask(taskId));
      let seen = '';
      const answer = new Promise<number>((resolve) => {
        const onData = (d: Buffer): void => {
          seen += d.toString('utf8');
          if (!seen.includes(taskId) && !seen.includes('wrong bearer')) return;
          held.client.off('data', onData);
          resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(seen)?.[1] ?? 0));
        };
        held.client.on('data', onData);
      });
      held.client.write(
        `POST ${new URL(suite.h.endpoint).pathname} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${authorization}\r\nContent-Type: application/json\r\n` +
          `A2A-Version: 1.0\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
      );
      return answer;
    };
    const right = `Bearer ${TEST_BEARER}`;
    for (const wrong of ['Bearer not-the-bearer', `${right}x`, `${right} x`]) {
      const held = await r.open();
      expect(await ask(held, right)).toBe(200);
      expect(await ask(held, right)).toBe(200);
      expect(await ask(held, wrong)).toBe(401);
    }
    const held = await r.open();
    expect(await ask(held, right)).toBe(200);
    expect(await ask(held, `bearer ${TEST_BEARER}`)).toBe(200);
    expect(await ask(held, right)).toBe(200);
    expect(held.serverSide.destroyed).toBe(false);
  });

  it('a caller\'s kept-alive socket (it presented the bearer) outlasts idle sockets that never did, though it waited longer', async () => {
    const r = rig();
    await r.begin();
    const taskId = await r.openTask();
    const caller = await r.keptAlive(taskId);
    // Idle sockets that send nothing at all fill the rest of the cap.
    const idle: Held[] = [];
    for (let i = 0; i < CAP - 1; i++) idle.push(await r.open());
    for (let i = 0; i < 3; i++) {
      const call = await r.callFresh(getTask(taskId));
      expect(call.status).toBe(200);
      expect(caller.serverSide.destroyed).toBe(false);
      expect(idle.map((x) => x.serverSide.destroyed)).toEqual([true, ...Array<boolean>(CAP - 2).fill(false)]);
      idle.shift();
      idle.push(await r.open());
    }
  });
});
