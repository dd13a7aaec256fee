/**
 * The generic test webhook receiver: a real `node:http` server on 127.0.0.1 standing in for a
 * cloud agent's webhook endpoint, so downlink tests exercise the real socket path (timeouts,
 * resets, retry-after) rather than a mock.
 *
 * Every request is recorded, verified or not. Verification uses the official `standardwebhooks`
 * library (when `secret` is given) and a constant-time bearer compare (when `bearer` is given);
 * `verified` is true only when every configured check passed. The answer comes from a scriptable
 * plan; the default answers 202 to a verified request and 401 to anything else.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Webhook } from 'standardwebhooks';
import type { Envelope } from '../../src/downlink/envelope.js';

/** One request as it arrived. */
export interface RecordedRequest {
  /** 1-based arrival number. */
  n: number;
  method: string;
  /** Path and query as sent. */
  path: string;
  /** `webhook-id`, `webhook-timestamp`, `webhook-signature` headers, null when absent. */
  id: string | null;
  timestamp: string | null;
  signature: string | null;
  /** The token of `Authorization: Bearer <token>`, null when absent. */
  bearer: string | null;
  /** Lower-case names; repeated values joined with `, `. */
  headers: Record<string, string>;
  /** The exact body bytes (empty when over the cap). */
  body: Buffer;
  /** The body parsed as JSON when it parses, else null (not checked for shape). */
  envelope: Envelope | null;
  /** Every configured check passed. */
  verified: boolean;
  /** Why `verified` is false: `bearer: …`, `signature: <library message>`, `body over … bytes`. */
  failure: string | null;
  /** Arrival time, ms since the epoch. */
  at: number;
  /** When the answer was written, ms since the epoch; null until then (and for a hung or reset request). */
  answeredAt: number | null;
}

/** A scripted answer: a status (after `delayMs`), a hung request, or a TCP reset. */
export type PlannedResponse =
  | { status: number; headers?: Record<string, string>; delayMs?: number; body?: string }
  | 'hang'
  | 'reset';

export interface WebhookReceiverOptions {
  /** `whsec_…` Standard Webhooks secret to verify with. */
  secret?: string;
  /** Expected bearer token. */
  bearer?: string;
  /** The plan; `n` is the 1-based arrival number. Default: 202 if verified, else 401. */
  respond?: (req: RecordedRequest, n: number) => PlannedResponse;
  /** Path of `url`; any path is accepted and recorded. Default `/hook`. */
  path?: string;
  /** Default 0 (a free port). */
  port?: number;
  /** Body cap, in bytes; over it the answer is 413 whatever the plan. Default 1 MiB. */
  maxBodyBytes?: number;
}

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port><path>`. */
  url: string;
  requests: RecordedRequest[];
  /** The distinct `webhook-id`s, in order of first arrival (a retried dispatch counts once). */
  distinctIds(): string[];
  /**
   * Resolves with the requests once at least `count` have arrived.
   * @throws Error after `timeoutMs` (default 5000 ms).
   */
  waitForRequests(count: number, timeoutMs?: number): Promise<RecordedRequest[]>;
  /** Closes the server, ending hung and delayed requests. */
  close(): Promise<void>;
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

function readBody(req: IncomingMessage, max: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= max) chunks.push(c);
    });
    req.on('end', () => resolve(size > max ? null : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * Starts the receiver on 127.0.0.1.
 * @throws TypeError when neither `secret` nor `bearer` is given (a receiver that checks nothing
 *   would make every test pass), or when the library refuses the secret.
 */
export async function startWebhookReceiver(opts: WebhookReceiverOptions): Promise<WebhookReceiver> {
  if (opts.secret === undefined && opts.bearer === undefined) {
    throw new TypeError('startWebhookReceiver: give secret, bearer or both');
  }
  const webhook = opts.secret === undefined ? undefined : new Webhook(opts.secret);
  const maxBody = opts.maxBodyBytes ?? 1024 * 1024;
  const respond = opts.respond ?? ((r) => ({ status: r.verified ? 202 : 401 }));
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const waiters = new Set<() => void>();

  const check = (headers: Record<string, string>, body: Buffer, bearer: string | null): string | null => {
    if (opts.bearer !== undefined && (bearer === null || !timingSafeEqual(digest(bearer), digest(opts.bearer)))) {
      return bearer === null ? 'bearer: missing' : 'bearer: mismatch';
    }
    if (webhook) {
      try {
        webhook.verify(body.toString('utf8'), headers, { jsonParse: false });
      } catch (err) {
        return `signature: ${(err as Error).message}`;
      }
    }
    return null;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const n = requests.length + 1;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    const raw = await readBody(req, maxBody);
    const body = raw ?? Buffer.alloc(0);
    const bearer = /^Bearer +(\S+) *$/i.exec(headers.authorization ?? '')?.[1] ?? null;
    const failure = raw === null ? `body over ${maxBody} bytes` : check(headers, body, bearer);
    let envelope: Envelope | null;
    try {
      envelope = JSON.parse(body.toString('utf8')) as Envelope;
    } catch {
      envelope = null;
    }
    const rec: RecordedRequest = {
      n,
      method: req.method ?? '',
      path: req.url ?? '',
      id: headers['webhook-id'] ?? null,
      timestamp: headers['webhook-timestamp'] ?? null,
      signature: headers['webhook-signature'] ?? null,
      bearer,
      headers,
      body,
      envelope,
      verified: failure === null,
      failure,
      at: Date.now(),
      answeredAt: null,
    };
    requests.push(rec);
    for (const w of waiters) w();

    const plan: PlannedResponse = raw === null ? { status: 413 } : respond(rec, n);
    if (plan === 'hang') return;
    if (plan === 'reset') return void req.socket.resetAndDestroy();
    const write = (): void => {
      const text = plan.body ?? '';
      res.writeHead(plan.status, { 'content-length': Buffer.byteLength(text), ...plan.headers });
      rec.answeredAt = Date.now();
      res.end(text);
    };
    if (!plan.delayMs) return write();
    const t = setTimeout(() => {
      timers.delete(t);
      write();
    }, plan.delayMs);
    timers.add(t);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  const waitForRequests = (count: number, timeoutMs = 5000): Promise<RecordedRequest[]> =>
    new Promise((resolve, reject) => {
      const done = (): void => {
        if (requests.length < count) return;
        clearTimeout(timer);
        waiters.delete(done);
        resolve(requests);
      };
      const timer = setTimeout(() => {
        waiters.delete(done);
        reject(new Error(`webhook receiver: ${requests.length} of ${count} requests after ${timeoutMs} ms`));
      }, timeoutMs);
      waiters.add(done);
      done();
    });

  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    for (const t of timers) clearTimeout(t);
    timers.clear();
    const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await stopped;
  };

  return {
    url: `http://127.0.0.1:${port}${opts.path ?? '/hook'}`,
    requests,
    distinctIds: () => [...new Set(requests.flatMap((r) => (r.id === null ? [] : [r.id])))],
    waitForRequests,
    close: () => (closing ??= close()),
  };
}
