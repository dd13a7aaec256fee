import { createRequire } from 'node:module';
import type { Dispatcher } from 'undici';
import type { AttemptOutcome } from '../store/attempts.js';

// undici is loaded by the first webhook, not at start (memory and start-up: bench/RESULTS.md, machine-limit).
const require = createRequire(import.meta.url);
const undici = (): typeof import('undici') => require('undici') as typeof import('undici');

/** What one POST came to. `retryAfterMs` is set when the receiver sent a usable `retry-after`. */
export interface DeliveryResult {
  outcome: AttemptOutcome;
  httpStatus: number | null;
  /** A short, secret-free description for the attempt row and the caller's status text. */
  error: string | null;
  retryAfterMs: number | null;
}

/** Response bytes read from the receiver at most; the rest is discarded. */
const MAX_RESPONSE_BYTES = 16 * 1024;

/**
 * Classifies an HTTP status: 2xx accepted; 408, 429 and 5xx are worth retrying; 410 means the hook
 * is gone (stop); every other 3xx/4xx is a failure (a redirect is not followed: the signed request
 * must reach the configured URL or nothing).
 */
export function classifyStatus(status: number): AttemptOutcome {
  if (status >= 200 && status < 300) return 'accepted';
  if (status === 410) return 'gone';
  if (status === 408 || status === 429 || status >= 500) return 'retry';
  return 'failed';
}

/**
 * Parses `retry-after` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
 * @returns ms from `now`, clamped to [0, 1 h], or null when absent or unparsable.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return null;
  const t = v.trim();
  let ms: number;
  if (/^\d+$/.test(t)) ms = Number(t) * 1000;
  else {
    const at = Date.parse(t);
    if (Number.isNaN(at)) return null;
    ms = at - now;
  }
  return Math.min(Math.max(ms, 0), 3600_000);
}

/**
 * Delay before attempt `attempt + 1`, in ms: exponential from 2 s, doubling, capped at 5 min,
 * with jitter in [50 %, 100 %]; a receiver's `retry-after` wins when it asks for longer.
 */
export function backoffMs(attempt: number, retryAfterMs: number | null, random: () => number = Math.random): number {
  const base = Math.min(2000 * 2 ** Math.max(0, attempt - 1), 300_000);
  const jittered = Math.round(base * (0.5 + random() / 2));
  return retryAfterMs !== null ? Math.max(jittered, retryAfterMs) : jittered;
}

/** An undici dispatcher for webhook delivery with the connect timeout set (undici's defaults are 300 s). */
export function webhookDispatcher(connectTimeoutMs: number): Dispatcher {
  return new (undici().Agent)({ connect: { timeout: connectTimeoutMs }, keepAliveTimeout: 10_000, pipelining: 0 });
}

/** Network errors (as {@link postWebhook} words them) raised before a connection was made: nothing was sent. */
const NOT_CONNECTED = /^network error: (?:ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH)$/;

/**
 * Whether the agent may have the job after an attempt that ended so: yes for a 2xx, and for a
 * failure after which that cannot be told (a timeout, a connection reset: the request may have
 * been written, see {@link postWebhook}); no when its webhook answered with another status (it
 * did not take the job) or no connection was made (refused, no such host, unreachable).
 */
export function mayHaveReachedAgent(r: Pick<DeliveryResult, 'outcome' | 'httpStatus' | 'error'>): boolean {
  if (r.outcome === 'accepted') return true;
  return r.httpStatus === null && !NOT_CONNECTED.test(r.error ?? '');
}

/**
 * One POST of the exact `body` bytes with `headers`, never following redirects. Never throws:
 * network errors and timeouts come back as `retry` with the reason in `error`. A timeout after the
 * request was written is ambiguous (the agent may already be working); the reply token keeps a
 * second reply from applying twice.
 *
 * @param timeoutMs total time for connect, headers and body
 */
export async function postWebhook(
  url: URL,
  headers: Record<string, string>,
  body: Buffer,
  timeoutMs: number,
  dispatcher?: Dispatcher,
  now: () => number = Date.now,
): Promise<DeliveryResult> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const res = await undici().request(url, {
      method: 'POST',
      headers,
      body,
      signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      ...(dispatcher ? { dispatcher } : {}),
    });
    const outcome = classifyStatus(res.statusCode);
    const result: DeliveryResult = {
      outcome,
      httpStatus: res.statusCode,
      error: outcome === 'accepted' ? null : `HTTP ${res.statusCode}`,
      retryAfterMs: outcome === 'retry' ? parseRetryAfter(res.headers['retry-after'], now()) : null,
    };
    // The status line is the receiver's answer (Standard Webhooks: a 2xx accepts): the body is
    // read only to keep the connection, and a body that stalls or breaks after it changes nothing.
    // Counted as a timeout, a 200 whose body trickled made the agent receive the job twice (attack review 4).
    try {
      let read = 0;
      for await (const chunk of res.body) {
        read += (chunk as Buffer).length;
        if (read > MAX_RESPONSE_BYTES) {
          res.body.destroy();
          break;
        }
      }
    } catch {
      res.body.destroy();
    }
    return result;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
    const code = e.code ?? e.cause?.code;
    const reason =
      signal.aborted || e.name === 'TimeoutError' || e.name === 'AbortError' || /Timeout/i.test(code ?? '')
        ? `timed out after ${timeoutMs} ms`
        : `network error: ${code ?? e.message}`;
    return { outcome: 'retry', httpStatus: null, error: reason, retryAfterMs: null };
  }
}
