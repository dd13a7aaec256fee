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
 * answers not yet written out, or with answers of {@link MAX_UNWRITTEN_BYTES} or more not yet
 * written out, is closed when the next request's answer begins or when an answer would take it
 * past that (a request on a socket that holds no unwritten answer is always answered). Over all
 * sockets, when the answers not yet written out pass {@link MAX_UNWRITTEN_TOTAL_BYTES}, the sockets
 * that have held theirs longest are closed until they are under it again: one unread answer per
 * socket is no way around the bound, and a caller that reads is not closed for another's unread
 * bytes (attack review 5). node:http parses
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

/**
 * Bytes of ended answers not yet written out that one socket may hold before its next answer
 * begins: a few answers of a large reply (a GetTask of a 10 MB reply is over 8 MiB), not 32 of
 * them. Two sockets pipelining 32 GetTask calls of an 8 MiB answer and never reading took the
 * bridge from 383 to 874 MiB of RSS when only answers were counted (attack review 4).
 */
export const MAX_UNWRITTEN_BYTES = 16 * 1024 * 1024;

/** Bytes of ended answers not yet written out that all of a server's sockets may hold: past it, those that have held theirs longest are closed. */
export const MAX_UNWRITTEN_TOTAL_BYTES = 64 * 1024 * 1024;

/** The bounds of unwritten answers one server applies (the constants above; a test may give smaller ones). */
export interface UnwrittenLimits {
  answers: number;
  bytes: number;
  totalBytes: number;
}

/** What a server's cap shares with its sockets: the warn line of a socket closed for unread answers, the limits, and the bytes all its sockets hold unwritten. */
interface CapOf {
  shed(socket: Socket): void;
  /** Closes the sockets other than `keep` whose unwritten answers are oldest until the unwritten bytes are within the total (or none but `keep` holds any). */
  overTotal(keep: Socket): void;
  limits: UnwrittenLimits;
  unwrittenBytes: number;
}

/** What the cap knows of one socket. */
interface Conn {
  /** Answers begun (a request's head arrived) and not yet ended by the server; pipelined requests count each. */
  busy: number;
  /** Whether a request on this socket presented the right bearer (server.ts, `presentsBearer`). */
  bearer: boolean;
  /** The Authorization value with which a request on this socket last presented the right bearer (see {@link bearerShownBefore}). */
  authorization: string | undefined;
  /** When it began waiting (accepted, or its last answer ended), as a number of {@link turn}: lower waited longer. */
  since: number;
  /** Answers begun and not yet written out ('finish'); at most {@link MAX_UNWRITTEN_ANSWERS}. */
  unwritten: number;
  /** Bytes of the bodies of answers ended and not yet written out. */
  bytes: number;
  /** When `bytes` last rose from 0, as a number of {@link turn}: lower has held unwritten answers longer. */
  unreadSince: number;
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
 * the socket holds answers not yet written out past the server's {@link UnwrittenLimits} (see the
 * file comment): the caller must then build no answer (node:http goes on emitting the rest of the
 * chunk's requests).
 */
export function answerBegun(socket: Socket): boolean {
  const c = conns.get(socket);
  if (!c) return !socket.destroyed;
  const { limits } = c.cap;
  if (c.unwritten >= limits.answers || (c.unwritten > 0 && c.bytes >= limits.bytes)) {
    if (!socket.destroyed) c.cap.shed(socket);
    return false;
  }
  c.busy += 1;
  c.unwritten += 1;
  return true;
}

/** An answer was written out whole: the listener of its 'finish' (one function for all answers, no closure per answer); `answerBytes`: what {@link answerEnded} counted of it. */
export function answerWritten(this: { req: { socket: Socket }; answerBytes: number }): void {
  const c = conns.get(this.req.socket);
  if (!c) return;
  if (c.unwritten > 0) c.unwritten -= 1;
  const n = Math.min(c.bytes, this.answerBytes);
  c.bytes -= n;
  c.cap.unwrittenBytes -= n;
}

/**
 * The server ends an answer on `socket` (`res.end()`) whose body's last chunk is `bytes` long;
 * with none left the socket waits from now. Returns false when the socket is closed, and false
 * after destroying it when another answer on it is not written out yet and this one would take its unwritten bytes past the
 * limits (the answers of requests pipelined in one chunk all begin before any ends, so the check
 * in {@link answerBegun} alone sees none of their bytes): the caller must then not send it.
 */
export function answerEnded(socket: Socket, bytes: number): boolean {
  const c = conns.get(socket);
  if (!c) return true;
  if (c.busy > 0 && --c.busy === 0) c.since = ++turn;
  // Closed (shed, evicted, or its client gone): nothing will be written, and bytes counted now would
  // stay in the server's total for good, its 'close' having taken the socket's own out already.
  if (socket.destroyed) return false;
  const { limits } = c.cap;
  if (c.unwritten > 1 && c.bytes + bytes > limits.bytes) {
    if (!socket.destroyed) c.cap.shed(socket);
    return false;
  }
  if (c.bytes === 0 && bytes > 0) c.unreadSince = ++turn;
  c.bytes += bytes;
  c.cap.unwrittenBytes += bytes;
  if (c.cap.unwrittenBytes > limits.totalBytes) c.cap.overTotal(socket);
  return true;
}

/**
 * A request on `socket` presented the right bearer in its Authorization field `authorization`: the
 * socket is evicted only after every one that did not, and the value is kept for {@link bearerShownBefore}.
 */
export function bearerPresented(socket: Socket, authorization: string): void {
  const c = conns.get(socket);
  if (!c) return;
  c.bearer = true;
  c.authorization = authorization;
}

/**
 * Whether `authorization` is the Authorization value with which an earlier request on this same
 * socket presented the right bearer: then it presents the bearer too, and the server skips the
 * bearer's hash (about 0.8 µs of a GetTask's 35). This comparison is of strings and not in
 * constant time, which is safe here: it runs only against a value this connection itself sent and
 * had accepted, so its timing can tell something only to the client that sent it, which holds the
 * bearer already. A connection that never presented the bearer always takes the constant-time path
 * (server.ts, `presentsBearer`). Only a socket the cap tracks is remembered.
 */
export function bearerShownBefore(socket: Socket, authorization: string): boolean {
  const c = conns.get(socket);
  return c !== undefined && c.authorization !== undefined && c.authorization === authorization;
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
 * were left out. `limits`: the bounds of unwritten answers (the constants above by default).
 */
export function capConnections(
  server: Server,
  cap: number,
  log: Logger,
  logEveryMs: number,
  now: () => number = Date.now,
  limits: UnwrittenLimits = { answers: MAX_UNWRITTEN_ANSWERS, bytes: MAX_UNWRITTEN_BYTES, totalBytes: MAX_UNWRITTEN_TOTAL_BYTES },
): void {
  const live = new Set<Socket>();
  const limited = limitedLog(log, logEveryMs);
  const forget = function (this: Socket): void {
    live.delete(this);
    // Its answers will never be written out: they no longer count against the server's total.
    const c = conns.get(this);
    if (c) {
      c.cap.unwrittenBytes -= c.bytes;
      c.bytes = 0;
    }
  };
  const capOf: CapOf = {
    shed(socket) {
      live.delete(socket);
      socket.destroy();
      limited(now(), 'warn', 'unread', { maxUnwrittenAnswers: limits.answers, maxUnwrittenBytes: limits.bytes }, 'connection closed: it pipelines requests and does not read the answers');
    },
    overTotal(keep) {
      while (capOf.unwrittenBytes > limits.totalBytes) {
        let oldest: Socket | undefined;
        let since = Infinity;
        for (const s of live) {
          const c = conns.get(s)!;
          if (s !== keep && c.bytes > 0 && c.unreadSince < since) [oldest, since] = [s, c.unreadSince];
        }
        // The socket whose answer just ended is never closed for the total: its own bytes are bounded per socket.
        if (oldest === undefined) return;
        const victim = oldest;
        live.delete(victim);
        // Its bytes leave the total now ('close' comes a turn later): the loop sees the total it leaves.
        forget.call(victim);
        victim.destroy();
        limited(now(), 'warn', 'unread-total', { maxUnwrittenTotalBytes: limits.totalBytes }, 'connection closed: the answers it holds unread are the oldest while the server holds more unread answers than it may');
      }
    },
    limits,
    unwrittenBytes: 0,
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
    conns.set(socket, { busy: 0, bearer: false, authorization: undefined, since: ++turn, unwritten: 0, bytes: 0, unreadSince: 0, cap: capOf });
    socket.once('close', forget);
  });
}
