import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { limitedLog } from '../log.js';

/**
 * The connection cap (`server.max_connections`; docs/architecture.md, "Operating"): the server
 * holds at most `cap` sockets, and at the cap a new connection evicts one that does no useful work
 * instead of being closed at accept, so a local process that fills the cap with sockets dribbling
 * a request head (slowloris) cannot deny service to a caller that connects afterwards.
 *
 * A socket is busy from the moment a request's head arrived until the server has ended its answer
 * (for a stream, until the stream ends), and waiting otherwise (connected and no head yet, or kept
 * alive after an answer). Only a waiting socket is evicted: first one that never carried a request
 * presenting the bearer, then one that did; within each, the one waiting longest. When every
 * socket is busy, the new connection is closed. An answer the server ended but the client does not
 * read counts as waiting, so a client that pipelines requests and never reads holds no slot.
 *
 * Pipelining is capped apart from the cap on sockets: a socket with {@link MAX_UNWRITTEN_ANSWERS}
 * answers not yet written out is closed when the next request's answer begins. node:http parses
 * every request of a chunk it read (up to 64 KiB, about 790 pipelined card GETs) before it pauses
 * a socket whose answers are not being read, and queues each answer in memory behind the unread
 * one: 400 such sockets cost 16 s of one event-loop turn and 430 MB of heap (docs/architecture.md,
 * "Operating"). The rest of a chunk is still parsed by node:http after the close (no answer is
 * built for it, server.ts): that cost is node's and is not bounded here.
 */

/**
 * Answers begun on one socket and not yet written out (node:http's 'finish': handed to the
 * kernel) that the socket may hold; the next one closes it. A client that pipelines this many
 * requests and reads the answers is served; one that sends more at once before reading is cut.
 */
export const MAX_UNWRITTEN_ANSWERS = 32;

/** What a server's cap shares with its sockets: the warn line of a socket closed for unread answers. */
interface CapOf {
  shed(socket: Socket): void;
}

/** What the cap knows of one socket. */
interface Conn {
  /** Answers begun (a request's head arrived) and not yet ended by the server; pipelined requests count each. */
  busy: number;
  /** Whether a request on this socket presented the right bearer (server.ts, `presentsBearer`). */
  bearer: boolean;
  /** When it began waiting (accepted, or its last answer ended), as a number of {@link turn}: lower waited longer. */
  since: number;
  /** Answers begun and not yet written out ('finish'); at most {@link MAX_UNWRITTEN_ANSWERS}. */
  unwritten: number;
  /** The cap of the server the socket belongs to. */
  cap: CapOf;
}

/** Every tracked socket's state; a socket belongs to one server, so one map serves all. */
const conns = new WeakMap<Socket, Conn>();
/** A counter that orders the moments sockets began to wait (no clock read per answer). */
let turn = 0;

/**
 * A request's head arrived on `socket` and its answer begins (called when node:http makes the
 * ServerResponse, while it parses the request). Returns false, and has destroyed the socket, when
 * the socket holds {@link MAX_UNWRITTEN_ANSWERS} answers not yet written out: the caller must
 * then build no answer (node:http goes on emitting the rest of the chunk's requests).
 */
export function answerBegun(socket: Socket): boolean {
  const c = conns.get(socket);
  if (!c) return !socket.destroyed;
  if (c.unwritten >= MAX_UNWRITTEN_ANSWERS) {
    if (!socket.destroyed) c.cap.shed(socket);
    return false;
  }
  c.busy += 1;
  c.unwritten += 1;
  return true;
}

/** An answer was written out whole: the listener of its 'finish' (one function for all answers, no closure per answer). */
export function answerWritten(this: { req: { socket: Socket } }): void {
  const c = conns.get(this.req.socket);
  if (c && c.unwritten > 0) c.unwritten -= 1;
}

/** The server ended an answer on `socket` (`res.end()`); with none left the socket waits from now. */
export function answerEnded(socket: Socket): void {
  const c = conns.get(socket);
  if (c && c.busy > 0 && --c.busy === 0) c.since = ++turn;
}

/** A request on `socket` presented the right bearer: the socket is evicted only after every one that did not. */
export function bearerPresented(socket: Socket): void {
  const c = conns.get(socket);
  if (c) c.bearer = true;
}

/**
 * The waiting socket to evict from `live`: the longest-waiting one that never presented the
 * bearer, else the longest-waiting one that did; undefined when every socket is busy. O(n), run
 * only when a connection arrives at the cap.
 */
function victimIn(live: Set<Socket>): Socket | undefined {
  let stranger: Socket | undefined, strangerSince = Infinity, caller: Socket | undefined, callerSince = Infinity;
  for (const s of live) {
    const c = conns.get(s)!;
    if (c.busy > 0) continue;
    if (!c.bearer && c.since < strangerSince) [stranger, strangerSince] = [s, c.since];
    else if (c.bearer && c.since < callerSince) [caller, callerSince] = [s, c.since];
  }
  return stranger ?? caller;
}

/**
 * Installs the cap on `server` (before it listens). node:http's own `maxConnections` stays as a
 * backstop at `cap + 1`: node counts a new socket before its 'connection' event, so it drops one
 * at accept only if this accounting were ever wrong. An eviction and a closed new connection are
 * each logged at warn at most once per `logEveryMs` (`limitedLog`); the next line says how many
 * were left out.
 */
export function capConnections(server: Server, cap: number, log: Logger, logEveryMs: number, now: () => number = Date.now): void {
  const live = new Set<Socket>();
  const limited = limitedLog(log, logEveryMs);
  const forget = function (this: Socket): void {
    live.delete(this);
  };
  const capOf: CapOf = {
    shed(socket) {
      live.delete(socket);
      socket.destroy();
      limited(now(), 'warn', 'unread', { maxUnwrittenAnswers: MAX_UNWRITTEN_ANSWERS }, 'connection closed: it pipelines requests and does not read the answers');
    },
  };
  server.maxConnections = cap + 1;
  server.on('drop', () => limited(now(), 'warn', 'drop', { maxConnections: cap }, 'connection closed at accept: server.max_connections reached'));
  server.on('connection', (socket: Socket) => {
    // A socket destroyed elsewhere (a timeout, closeIdleConnections) leaves `live` at its 'close',
    // a turn later; node:http's count dropped at once: drop it here too before judging the cap.
    if (live.size >= cap) for (const s of live) if (s.destroyed) live.delete(s);
    if (live.size >= cap) {
      const victim = victimIn(live);
      if (!victim) {
        socket.destroy();
        return limited(now(), 'warn', 'drop', { maxConnections: cap }, 'connection closed at accept: server.max_connections reached and every connection is busy');
      }
      live.delete(victim);
      victim.destroy();
      limited(now(), 'warn', 'evict', { maxConnections: cap, presentedBearer: conns.get(victim)!.bearer }, 'idle connection closed for a new one: server.max_connections reached');
    }
    live.add(socket);
    conns.set(socket, { busy: 0, bearer: false, since: ++turn, unwritten: 0, cap: capOf });
    socket.once('close', forget);
  });
}
