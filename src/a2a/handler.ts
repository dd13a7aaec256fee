import type { Logger } from 'pino';
import type { AgentConfig } from '../config/config.js';
import type { Bridge } from '../core/bridge.js';
import { A2AError, asA2AError } from './errors.js';
import { StreamResult } from './call.js';
import { findMethod, suggestMethod, type FoundMethod } from './methods.js';
import type { StreamLimiter } from './stream-limit.js';

/** The two A2A dialects served: v1.0 (`SendMessage`…) and v0.3 (`message/send`…). */
export type Dialect = '1.0' | '0.3';

/** One A2A call, whatever carried it: the JSON-RPC envelope is already parsed (src/a2a/jsonrpc.ts). */
export interface A2ARequest {
  /** The agent the call is addressed to (its endpoint). */
  agent: AgentConfig;
  method: string;
  params: unknown;
  /** The `A2A-Version` header, trimmed; '' when absent. */
  version: string;
  /** A short description of the caller for the audit entry (e.g. its User-Agent). */
  caller: string;
  /** Who holds the streams this call may open, for `server.max_streams_per_caller` (the credential it presented, hashed). */
  callerKey: string;
  /** Aborted when the client goes away (ends a stream). */
  signal?: AbortSignal;
}

/**
 * What a call came to, in the dialect it is answered in: a result, an error, or a stream of
 * events (SendStreamingMessage and SubscribeToTask, A2A v1.0 §3.1.2 and §3.1.6; `message/stream`
 * and `tasks/resubscribe` in v0.3), each event the `result` of one JSON-RPC response.
 */
export type A2AOutcome =
  | { kind: 'result'; dialect: Dialect; result: unknown }
  | { kind: 'error'; dialect: Dialect; error: A2AError }
  | { kind: 'stream'; dialect: Dialect; events: AsyncIterable<unknown> };

/**
 * `A2A-Version` values served, by Major.Minor: patch numbers never count in negotiation
 * (A2A v1.0 §3.6), and a bare major means its latest minor.
 */
export function supportedVersion(header: string): Dialect | null {
  const m = /^(\d+)(?:\.(\d+)(?:\.\d+)?)?$/.exec(header);
  if (!m) return null;
  const major = Number(m[1]);
  const minor = m[2] === undefined ? undefined : Number(m[2]);
  if (major === 1 && (minor === undefined || minor === 0)) return '1.0';
  if (major === 0 && minor === 3) return '0.3';
  return null;
}

/** The dialect of an answer that names no method (a body that is not a JSON-RPC request): v1.0 only when the header asks for it. */
export function dialectOfHeader(version: string): Dialect {
  return version.startsWith('1') ? '1.0' : '0.3';
}

/**
 * The A2A handler, free of any transport: version negotiation, method dispatch, and the mapping
 * of every error to the caller's JSON-RPC error (src/a2a/errors.ts). The HTTP server
 * (src/a2a/server.ts) only listens, checks the Host, the bearer and the body, and hands over.
 * A defect (an error that is neither A2A's nor the core's) is logged and answered -32603.
 *
 * The outcome is synchronous when the method answered synchronously (GetTask while nothing is
 * due: Bridge.get), so such a call costs no promise on the way back; else a promise of it.
 */
export function a2aHandler(bridge: Bridge, log: Logger, streams: StreamLimiter): (req: A2ARequest) => A2AOutcome | Promise<A2AOutcome> {
  const failed = (err: unknown, dialect: Dialect, method: string): A2AOutcome => {
    const known = asA2AError(err);
    if (known) return { kind: 'error', dialect, error: known };
    const refused = bridge.ctx.store.writeFailure();
    if (refused && (err as { code?: unknown }).code === refused.code) {
      // The disk, not a defect: the caller learns it is the bridge's and passing (GET /health says so too).
      log.error({ err: (err as Error).message, code: refused.code, method }, 'store write failed');
      return { kind: 'error', dialect, error: new A2AError('internalError', `The bridge could not write its store (${refused.code}: ${refused.message}). Call again once its operator has freed disk space; GET /health shows the error.`) };
    }
    log.error({ err: (err as Error).message, stack: (err as Error).stack, method }, 'internal error');
    return { kind: 'error', dialect, error: new A2AError('internalError', 'Internal error; see the bridge log') };
  };
  const outcome = (result: unknown, dialect: Dialect, release: () => void): A2AOutcome =>
    result instanceof StreamResult ? { kind: 'stream', dialect, events: releasing(result.events, release) } : { kind: 'result', dialect, result };

  /** A streaming method: its stream counts against the caller's cap until it ends. */
  const streamCall = async (found: FoundMethod, req: A2ARequest, dialect: Dialect): Promise<A2AOutcome> => {
    let release: (() => void) | null = null;
    try {
      // A stream closed at the caller's cap ends like one whose client went away (src/a2a/stream-limit.ts).
      const capped = new AbortController();
      const signal = req.signal ? AbortSignal.any([req.signal, capped.signal]) : capped.signal;
      release = streams.open(req.callerKey, () => {
        log.info({ method: req.method, caller: req.caller }, 'stream closed: its caller opened one more at server.max_streams_per_caller');
        capped.abort();
      });
      const result = await found.handler(bridge, req.params ?? {}, { agent: req.agent, caller: req.caller, signal });
      const done = release;
      release = null;
      return outcome(result, dialect, done);
    } catch (err) {
      return failed(err, dialect, req.method);
    } finally {
      release?.();
    }
  };

  /** The last `A2A-Version` read and what it came to: a client sends the same one on every call. */
  let lastVersion = '';
  let lastDialect: Dialect | null = null;
  return (req) => {
    const found = findMethod(req.method);
    // A method names its dialect; an unknown one is answered in the dialect the header asks for.
    const dialect: Dialect = found?.dialect ?? (req.version.startsWith('0') || req.version === '' ? '0.3' : '1.0');
    if (req.version !== '' && req.version !== lastVersion) {
      lastDialect = supportedVersion(req.version);
      lastVersion = req.version;
    }
    if (req.version !== '' && lastDialect === null) {
      return { kind: 'error', dialect, error: new A2AError('versionNotSupported', `A2A-Version ${req.version} is not supported; use 1.0 or 0.3`) };
    }
    if (!found) {
      // A near miss of a served name gets that name (ours); the caller's name is cut, as jsonrpc.ts cuts it.
      const near = suggestMethod(req.method, req.version === '' ? null : dialect);
      return { kind: 'error', dialect, error: new A2AError('methodNotFound', `Method not found: ${req.method.slice(0, 80)}${near === null ? '' : `; did you mean ${near}?`}`) };
    }
    if (found.streams) return streamCall(found, req, dialect);
    try {
      const result = found.handler(bridge, req.params ?? {}, { agent: req.agent, caller: req.caller, signal: req.signal });
      if (result instanceof Promise) {
        return result.then(
          (r) => outcome(r, dialect, none),
          (err: unknown) => failed(err, dialect, req.method),
        );
      }
      return outcome(result, dialect, none);
    } catch (err) {
      return failed(err, dialect, req.method);
    }
  };
}

/** The release of a call that holds nothing. */
const none = (): void => undefined;

/** `events`, calling `release` once when the stream ends (drained, returned early or failed). */
async function* releasing(events: AsyncIterable<unknown>, release: () => void): AsyncIterable<unknown> {
  try {
    yield* events;
  } finally {
    release();
  }
}
