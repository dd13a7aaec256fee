import { hash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { isLoopbackLiteral, type AgentConfig, type Config } from '../config/config.js';
import type { Bridge } from '../core/bridge.js';
import { cardFor, sendCard } from './card-route.js';
import { UNREAD, unsupportedContent } from './content-headers.js';
import { A2AError, asA2AError } from './errors.js';
import { a2aHandler, dialectOfHeader, supportedVersion, type A2AOutcome } from './handler.js';
import { findMethod } from './methods.js';
import { collectBody, readBody } from './request-body.js';
import { jsonBody } from './json-body.js';
import { requestFields } from './request-fields.js';
import { agentRoutes, callerNames, loopbackHostCheck } from './request-head.js';
import { pathOf, targetAuthority, urlOf } from './request-target.js';
import { restError, routeRest, type RestCall } from './rest.js';
import { storeFingerprint } from '../core/store-fingerprint.js';
import { health } from './health.js';
import { errorResponse, isResponse, parseRequest, resultBytes, resultText, type JsonRpcId, type JsonRpcResponse } from './jsonrpc.js';
import { JsonText } from './call.js';
import { eventText, writeSse } from './sse.js';
import { StreamLimiter } from './stream-limit.js';
import { limitedLog } from '../log.js';
import { bearerPresented, bearerShownBefore, capConnections } from './connection-cap.js';
import { DoorResponse } from './door-response.js';
import { stopController, stopServer, type ServerStopped } from './shutdown.js';

// node:http through require, not `import`: Node's ES module facade of node:http reads every
// export, and its lazy ones load Node's bundled undici (fetch, WebSocket): +40 ms of CPU and
// +12 MiB at start for nothing a server uses (bench/RESULTS.md, machine-limit).
const { createServer } = createRequire(import.meta.url)('node:http') as typeof import('node:http');

/** Thrown at start-up when the listen address is not a loopback literal (defence in depth beside config validation). */
export class ListenError extends Error {
  override readonly name = 'ListenError';
}

export interface RunningServer {
  server: Server;
  /** `http://127.0.0.1:<port>` (IPv6: `http://[::1]:<port>`). */
  baseUrl: string;
  port: number;
  /** The JSON-RPC URL of an agent, exactly as its card names it. */
  endpoint(agent: AgentConfig): string;
  /** Stops accepting, ends the open streams and waits a bounded time for the answers under way (src/a2a/shutdown.ts). */
  close(): Promise<ServerStopped>;
}

const CARD_PATHS = new Set(['/.well-known/agent-card.json', '/.well-known/agent.json']);

/** A refused request (401, 403) is logged at most once per this many ms per status; the rest are counted. */
const REFUSAL_LOG_EVERY_MS = 60_000;

/**
 * Logs refused requests at warn, at most one line per status per {@link REFUSAL_LOG_EVERY_MS}
 * (`limitedLog`): a local process that hammers the port cannot flood the log; the next line says
 * how many were left out. `fields` hold no secret (never the presented token) and no request body.
 */
function refusalLogger(log: Logger, now: () => number = Date.now): (status: 401 | 403, fields: Record<string, unknown>, msg: string) => void {
  const limited = limitedLog(log, REFUSAL_LOG_EVERY_MS);
  return (status, fields, msg) => limited(now(), 'warn', String(status), { status, ...fields }, msg);
}

/**
 * SHA-256 of `s` (UTF-8): one call into OpenSSL and no Hash object per request; read out as hex
 * into a pooled Buffer, which costs less than a digest Buffer of its own.
 */
function digest(s: string): Buffer {
  return Buffer.from(hash('sha256', s, 'hex'), 'hex');
}

/** Whether `name` is a method served (for parseRequest: a notification of an unknown one is -32601). */
const isMethod = (name: string): boolean => findMethod(name) !== undefined;

/**
 * The controller that ends a call's stream when its client goes away (sse.ts): made only for a
 * method that streams, the only ones that read the signal (src/a2a/handler.ts), so a GetTask
 * builds no AbortController and AbortSignal (an EventTarget) per call.
 */
const streamsWhenCalled = (method: string): AbortController | undefined => (findMethod(method)?.streams ? new AbortController() : undefined);

/** The `Allow` of a 405 on a GET route: it answers HEAD too (RFC 9110 §10.2.1, §9.3.2). */
const GET_ONLY = { allow: 'GET, HEAD' } as const;

/** What `presentsBearer` finds, shared: a call allocates none. */
const PRESENTED = { m: true, ok: true } as const;
const WRONG_CREDENTIAL = { m: true, ok: false } as const;
const NO_CREDENTIAL = { m: false, ok: false } as const;

/** The headers of every JSON answer. */
const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' } as const;

/**
 * Starts the A2A HTTP server: loopback only, enforced here again; the `Host` header must name a
 * loopback host (DNS rebinding); JSON-RPC bodies are capped; the bearer is compared in constant
 * time (SHA-256 of both, then `timingSafeEqual`, so the length leaks nothing; the presented one is
 * hashed once per call). Cards and /health
 * need no auth (Hermes' discover sends none). The call itself goes to the transport-free handler
 * (src/a2a/handler.ts).
 *
 * @throws ListenError for a non-loopback address; the listen error (EADDRINUSE…) otherwise
 */
export async function startServer(config: Config, bridge: Bridge, log: Logger): Promise<RunningServer> {
  const { host, port } = config.server;
  if (!isLoopbackLiteral(host)) {
    throw new ListenError(`refusing to listen on ${host}: a2a-mailbridge listens on loopback only; set server.listen = "127.0.0.1:${port}"`);
  }
  const bearer = digest(config.server.bearer);
  /** The key of the streams of whoever presents the bearer (a hash of it, never the bearer): there is one bearer, so one key. */
  const callerKey = bearer.toString('hex').slice(0, 16);
  const streams = new StreamLimiter(config.server.maxStreamsPerCaller);
  /** Aborted by close(): every open stream ends (src/a2a/shutdown.ts). */
  const stopping = stopController();
  const handleCall = a2aHandler(bridge, log, streams);
  const agents = new Map(config.agents.map((a) => [a.name, a]));
  const refused = refusalLogger(log);
  /** The store's name in /health (no path): `status` tells this config's bridge by it. */
  const storeId = storeFingerprint(config.store.path, config.server.bearer);
  /** When this config began to be served: the cards' Last-Modified. */
  const servingSince = Date.now();
  let baseUrl = '';
  const endpoint = (a: AgentConfig): string => `${baseUrl}/agents/${a.name}`;

  const hostAllowed = loopbackHostCheck();
  const callerOf = callerNames();
  const agentRoute = agentRoutes(agents);

  /** The agent's URL as the caller reached it: the Host it sent (a loopback name, checked above), else the listening address. */
  const endpointFor = (req: IncomingMessage, a: AgentConfig): string => {
    const host = requestFields(req).host?.trim().toLowerCase();
    return host ? `http://${host}/agents/${a.name}` : endpoint(a);
  };

  /** Sends `body` as JSON; a {@link JsonText} (an answer serialised before) as it is. */
  const send = (res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void => {
    const text = body instanceof JsonText ? body.text : JSON.stringify(body);
    res.writeHead(status, headers ? { ...JSON_HEADERS, ...headers } : JSON_HEADERS);
    res.end(text);
  };

  /**
   * Whether the request presents the bearer (`m`: whether it has a Bearer credential at all):
   * hashed once, compared in constant time, never as a string — except that the Authorization value
   * with which the same connection presented the bearer before is recognised as a string
   * (connection-cap.ts, `bearerShownBefore`, says why that leaks nothing).
   */
  const presentsBearer = (req: IncomingMessage): { m: boolean; ok: boolean } => {
    const header = requestFields(req).authorization;
    if (header === undefined) return NO_CREDENTIAL;
    if (bearerShownBefore(req.socket, header)) return PRESENTED;
    const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
    const ok = m !== null && timingSafeEqual(digest(m[1]!), bearer);
    if (ok) bearerPresented(req.socket, header);
    return ok ? PRESENTED : m === null ? NO_CREDENTIAL : WRONG_CREDENTIAL;
  };
  /** The caller's key (a hash of its bearer) when the request presents the bearer; else answers 401 and returns null. */
  const authorized = (req: IncomingMessage, res: ServerResponse, agent: AgentConfig): string | null => {
    const { m, ok } = presentsBearer(req);
    if (!ok) {
      refused(401, { agent: agent.name, why: m ? 'wrong bearer' : 'no bearer' }, 'request refused: 401 (the caller must send the content of server.bearer_file)');
      send(res, 401, { error: 'missing or wrong bearer token' }, { 'www-authenticate': 'Bearer realm="a2a-mailbridge"', ...UNREAD });
      return null;
    }
    return callerKey;
  };

  /** One JSON-RPC call: the bearer and the content headers, then the body, then the handler; answered in the turn the body arrived when the handler answers at once. */
  const rpc = (req: IncomingMessage, res: ServerResponse, agent: AgentConfig): void => {
    const callerKey = authorized(req, res, agent);
    if (callerKey === null) return;
    const fields = requestFields(req);
    const version = String(fields['a2a-version'] ?? '').trim();
    const unreadable = unsupportedContent(fields);
    // A JSON-RPC error body, so a JSON-RPC client can read it (A2A v1.0 §9.5: ContentTypeNotSupportedError).
    if (unreadable) return send(res, unreadable.status, errorResponse(null, unreadable.error, dialectOfHeader(version)), unreadable.headers);
    collectBody(
      req,
      config.server.maxBodyBytes,
      (body) => {
        // Closed (its answers unread: connection-cap.ts) while the body came: no answer to build.
        if (req.socket.destroyed) return;
        try {
          const pending = answerRpc(req, res, agent, callerKey, version, body);
          if (pending) pending.catch((err: unknown) => failed(req, res, err));
        } catch (err) {
          failed(req, res, err);
        }
      },
      (err) => failed(req, res, err),
    );
  };

  /** The answer to a JSON-RPC body (null: over server.max_body_bytes); a promise only when the handler's outcome is one, or a stream. */
  const answerRpc = (req: IncomingMessage, res: ServerResponse, agent: AgentConfig, callerKey: string, version: string, body: Buffer | null): void | Promise<void> => {
    if (body === null) {
      // A JSON-RPC error body, as for 415, so a JSON-RPC client can read why (-32600).
      return send(res, 413, errorResponse(null, new A2AError('invalidRequest', `request body over ${config.server.maxBodyBytes} bytes (server.max_body_bytes)`), dialectOfHeader(version)), { connection: 'close' });
    }
    const parsed = parseRequest(body, dialectOfHeader(version), isMethod);
    if (isResponse(parsed)) return send(res, 200, parsed);
    const abort = streamsWhenCalled(parsed.method);
    const answered = handleCall({ agent, method: parsed.method, params: parsed.params, version, caller: callerOf(req), callerKey, ...(abort ? { signal: abort.signal } : {}) });
    if (answered instanceof Promise) return answered.then((outcome) => answerOutcome(res, agent, parsed, outcome, abort));
    return answerOutcome(res, agent, parsed, answered, abort);
  };

  const answerOutcome = (res: ServerResponse, agent: AgentConfig, call: { id: JsonRpcId; method: string }, outcome: A2AOutcome, abort: AbortController | undefined): void | Promise<void> => {
    if (outcome.kind === 'stream') {
      const events = writeSse(res, outcome.events, (result) => resultText(call.id, result), (err) => streamError(call.id, err, outcome.dialect), {
        keepAliveMs: config.server.streamKeepAliveMs,
        abort: abort ?? new AbortController(),
        stopping: stopping.signal,
      });
      return events.then((n) => void log.debug({ agent: agent.name, method: call.method, events: n }, 'stream closed'));
    }
    if (outcome.kind === 'result') {
      res.writeHead(200, JSON_HEADERS);
      res.end(outcome.result instanceof JsonText ? resultBytes(call.id, outcome.result) : resultText(call.id, outcome.result));
      return;
    }
    send(res, 200, errorResponse(call.id, outcome.error, outcome.dialect));
  };

  /** A request that failed: a client that went away is logged at debug, anything else as an error, answered 500 when no answer was begun. */
  const failed = (req: IncomingMessage, res: ServerResponse, err: unknown): void => {
    // A caller that hangs up mid-request (its own timeout) is not our error.
    const aborted = req.destroyed || (err as NodeJS.ErrnoException).code === 'ECONNRESET' || (err as Error).message === 'aborted';
    if (aborted) log.debug({ err: (err as Error).message }, 'request aborted by the client');
    else log.error({ err: (err as Error).message }, 'request failed');
    if (!res.headersSent) send(res, 500, { error: 'internal error' });
    else res.destroy();
  };

  /** The error event of a stream that failed after it started (a defect, or the store went away). */
  const streamError = (id: JsonRpcId, err: unknown, dialect: '1.0' | '0.3'): JsonRpcResponse => {
    const known = asA2AError(err);
    if (!known) log.error({ err: (err as Error).message }, 'stream failed');
    return errorResponse(id, known ?? new A2AError('internalError', 'Internal error; see the bridge log'), dialect);
  };

  /**
   * The 404 of the server root (a client given the bare address), or under /agents/ of a name that
   * is no agent: it names the agent endpoints (public in their cards anyway), never the path asked
   * for (the caller's text).
   */
  const known = (res: ServerResponse): void => {
    const list = [...agents.values()];
    send(res, 404, { error: `no agent at this path; the agents are: ${list.map((a) => `${a.name} (${endpoint(a)})`).join(', ')}`, agents: list.map((a) => a.name) });
  };

  /** Routes one request; a promise only for the answers that wait (a handler's, the metrics, a stream). */
  const handle = (req: IncomingMessage, res: ServerResponse): void | Promise<void> => {
    const path = pathOf(req.url);
    // A target in absolute-form names the host instead of the Host header (RFC 9112 §3.2.2): both must be loopback.
    const authority = path === null ? null : targetAuthority(req.url);
    const fields = requestFields(req);
    const foreign = !hostAllowed(fields.host) ? String(fields.host ?? '') : authority !== null && !hostAllowed(authority) ? authority : null;
    if (foreign !== null) {
      // The Host header is the caller's text: logged JSON-escaped and cut, for the operator to recognise.
      refused(403, { host: foreign.slice(0, 100) }, 'request refused: 403 (Host is not a loopback name)');
      send(res, 403, { error: 'Host header must name a loopback host (127.0.0.1, [::1] or localhost)' });
      return;
    }
    if (path === null) return send(res, 400, { error: 'the request target is not a valid URL (RFC 9112 §3.2)' });
    // RFC 9112 §3.2: more than one Host field line is a 400 (node:http keeps the first, silently).
    if (fields.hostLines > 1) return send(res, 400, { error: 'more than one Host header (RFC 9112 §3.2)' }, { connection: 'close' });
    const get = req.method === 'GET' || req.method === 'HEAD';
    if (path === '/health') {
      if (!get) return send(res, 405, { error: 'use GET' }, GET_ONLY);
      // The store's fingerprint and the pid only to whoever presents the bearer (status and stop do): keyed with
      // the bearer, the fingerprint must be no offline test of guessed bearers for any local process (core/store-fingerprint.ts).
      const holder = fields.authorization !== undefined && presentsBearer(req).ok;
      return send(res, 200, health(bridge, holder ? storeId : null, holder ? process.pid : null));
    }
    if (path === '/metrics' && bridge.ctx.metrics) {
      if (!get) return send(res, 405, { error: 'use GET' }, GET_ONLY);
      return bridge.ctx.metrics.render().then((m) => {
        res.writeHead(200, { 'content-type': m.contentType, 'cache-control': 'no-store' });
        res.end(m.body);
      });
    }
    // The card at the origin's well-known path (RFC 8615; the A2A spec, "Agent Discovery"), and at /agents/.well-known/…:
    // what an SDK that resolves the card path relative to its base URL (@a2a-js/sdk: new
    // URL('.well-known/agent-card.json', base)) fetches when given an agent URL without its
    // trailing slash. Either names one agent only when one is configured; the card's `url` then
    // routes the client to /agents/<name>. With several, the 404 says which URL to use.
    const agentsCard = path.startsWith('/agents/') && CARD_PATHS.has(path.slice('/agents'.length));
    if (CARD_PATHS.has(path) || agentsCard) {
      if (!get) return send(res, 405, { error: 'use GET' }, GET_ONLY);
      if (agents.size !== 1) {
        return send(res, 404, {
          error: `several agents: give the client an agent's URL with its trailing slash (${baseUrl}/agents/<name>/), or fetch ${baseUrl}/agents/<name>/.well-known/agent-card.json`,
          agents: [...agents.keys()],
        });
      }
      const only = [...agents.values()][0]!;
      return sendCard(req, res, cardFor(req, urlOf(req.url), only, endpointFor(req, only), path.endsWith('/agent.json')).body, servingSince);
    }
    if (path === '/') return known(res);
    const route = agentRoute(path);
    if (!route) return send(res, 404, { error: 'not found' });
    const { agent, rest } = route;
    if (!agent) return known(res);
    if (CARD_PATHS.has(rest)) {
      if (!get) return send(res, 405, { error: 'use GET' }, GET_ONLY);
      return sendCard(req, res, cardFor(req, urlOf(req.url), agent, endpointFor(req, agent), rest.endsWith('/agent.json')).body, servingSince);
    }
    if (rest === '' || rest === '/') {
      if (req.method !== 'POST') return send(res, 405, { error: 'JSON-RPC: use POST' }, { allow: 'POST' });
      return rpc(req, res, agent);
    }
    const call = routeRest(req.method ?? 'GET', rest, urlOf(req.url));
    if (call === null) return send(res, 404, { error: 'not found' });
    if ('allow' in call) return send(res, 405, { error: `use ${call.allow}` }, { allow: call.allow });
    return restCall(req, res, agent, call);
  };

  /** One HTTP+JSON call (src/a2a/rest.ts): the same checks as JSON-RPC, then the same handler, answered in AIP-193 / SSE form. */
  const restCall = async (req: IncomingMessage, res: ServerResponse, agent: AgentConfig, route: RestCall): Promise<void> => {
    const callerKey = authorized(req, res, agent);
    if (callerKey === null) return;
    const fail = (err: A2AError, headers?: Record<string, string>): void => {
      const e = restError(err);
      send(res, e.status, e.body, headers);
    };
    // Only v1.0 is served over HTTP+JSON; no header is taken as the caller meaning this interface's version.
    const fields = requestFields(req);
    const version = String(fields['a2a-version'] ?? urlOf(req.url).searchParams.get('A2A-Version') ?? '').trim();
    if (version !== '' && supportedVersion(version) !== '1.0') {
      return fail(new A2AError('versionNotSupported', `A2A-Version ${version.slice(0, 20)} is not served over HTTP+JSON; use 1.0`), UNREAD);
    }
    let params: Record<string, unknown> = route.params;
    if (route.body) {
      const unreadable = unsupportedContent(fields);
      if (unreadable) return send(res, unreadable.status, restError(unreadable.error, unreadable.status).body, unreadable.headers);
      const body = await readBody(req, config.server.maxBodyBytes);
      if (body === null) return send(res, 413, restError(new A2AError('invalidRequest', `request body over ${config.server.maxBodyBytes} bytes (server.max_body_bytes)`), 413).body, { connection: 'close' });
      if (body.length > 0) {
        const parsed = jsonBody(body);
        if ('error' in parsed) return fail(new A2AError('parseError', parsed.error));
        const doc = parsed.doc;
        if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return fail(new A2AError('invalidRequest', 'the body must be a JSON object'));
        params = { ...(doc as Record<string, unknown>), ...route.params };
      }
    } else req.resume();
    const caller = callerOf(req);
    const abort = streamsWhenCalled(route.method);
    const outcome = await handleCall({ agent, method: route.method, params, version: '1.0', caller, callerKey, ...(abort ? { signal: abort.signal } : {}) });
    if (outcome.kind === 'error') return fail(outcome.error);
    if (outcome.kind === 'stream') {
      await writeSse(res, outcome.events, eventText, (err) => restError(asA2AError(err) ?? new A2AError('internalError', 'Internal error; see the bridge log')).body, {
        keepAliveMs: config.server.streamKeepAliveMs,
        abort: abort ?? new AbortController(),
        stopping: stopping.signal,
      });
      return;
    }
    send(res, 200, outcome.result ?? {});
  };

  // A request's headers within 10 s and the whole request within 120 s (a stream's answer is not
  // bounded by either), looked at every 2 s; at most server.max_connections sockets (descriptors stay
  // for the store, mailbox, webhook), a new one at the cap evicting an idle one (connection-cap.ts).
  const server = createServer({ ServerResponse: DoorResponse, requestTimeout: 120_000, headersTimeout: 10_000, connectionsCheckingInterval: 2_000 }, (req, res) => {
    // Closed while node:http parsed its pipelined requests (answers unread; evicted): no answer; destroyed now with no error, node:http's abort at close (an error, stack formatted, per request) finds it done.
    if (req.socket.destroyed) return void req.destroy();
    try {
      const pending = handle(req, res);
      if (pending) pending.catch((err: unknown) => failed(req, res, err));
    } catch (err) {
      failed(req, res, err);
    }
  });
  capConnections(server, config.server.maxConnections, log, REFUSAL_LOG_EVERY_MS);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port, exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  if (!isLoopbackLiteral(addr.address)) {
    server.close();
    throw new ListenError(`bound to ${addr.address}, which is not loopback; refusing to serve`);
  }
  const actualPort = addr.port;
  baseUrl = addr.family === 'IPv6' ? `http://[${addr.address}]:${addr.port}` : `http://${addr.address}:${addr.port}`;
  log.info({ url: baseUrl, agents: config.agents.map((a) => endpoint(a)) }, 'a2a-mailbridge listening');
  return {
    server,
    baseUrl,
    port: actualPort,
    endpoint,
    close: () => stopServer(server, stopping, streams.size),
  };
}
