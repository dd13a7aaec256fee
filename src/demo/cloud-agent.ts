/**
 * The simulated cloud agent of `a2a-mailbridge demo` and of the integration tests: the far side of
 * the round trip. It receives the bridge's webhook exactly as a real receiver would, answers 202 at
 * once, then "works", and sends its answer the only way a real agent can: as an email, DKIM-signed
 * by its domain and stamped by the provider's MX (`buildReplyMail`), handed to a pluggable
 * `deliver` (a Maildir writer in the demo, an IMAP APPEND in tests).
 *
 * Request checks, in order (answers in brackets):
 * 1. path and method (404, 405); declared size over the cap (413);
 * 2. `Authorization: Bearer <token>` when a bearer is configured, compared in constant time (401);
 * 3. the body, read up to the cap (413);
 * 4. the Standard Webhooks signature when a secret is configured, checked with the official
 *    `standardwebhooks` library over the body as a string (401; the library also refuses a
 *    timestamp more than 5 min old or new);
 * 5. the body is a JSON envelope (400); then 202 and the work starts after the answer.
 *
 * A retried delivery carries the same `webhook-id` (docs/architecture.md, "The webhook envelope");
 * it is answered 202 again and recorded, but never produces a second reply. Without Standard
 * Webhooks the dedupe key is the envelope's `reply_token`, which is also one per dispatch.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { Envelope } from '../downlink/envelope.js';
import { buildReplyMail, type DkimIdentity, type ProviderStamp, type ReplyStatus } from './reply-mail.js';

/** What the agent answers to one envelope; null sends no reply. */
export interface AgentAnswer {
  status: ReplyStatus;
  text: string;
  /** Attachments of the reply mail (docs/agent-text.md: files, and `application/json` as data). */
  attachments?: { filename: string; contentType: string; content: Buffer | string }[];
}

export interface CloudAgentOptions {
  /** The agent's From address, e.g. `agent@agent.example`. */
  address: string;
  /** Display name in From; default `Demo Cloud Agent`. */
  displayName?: string;
  /** The agent's DKIM key; its `domain` should be the address's domain for DMARC alignment. */
  dkim: DkimIdentity;
  /** Receives each reply's raw bytes; a rejection is recorded in `errors` and the reply is not kept. */
  deliver: (raw: Buffer) => Promise<void>;
  /** Require `Authorization: Bearer <bearer>`. */
  bearer?: string;
  /** Require a Standard Webhooks signature with this `whsec_…` secret. */
  signingSecret?: string;
  /** Default `127.0.0.1`. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
  /** Default `/hook`. */
  path?: string;
  /** The provider stamp on replies; default mx1.messagingengine.com receiving from `mail.<dkim domain>` [192.0.2.25]. */
  provider?: ProviderStamp;
  /** Composes the answer; default `defaultAnswer`. */
  answer?: (envelope: Envelope) => Promise<AgentAnswer | null>;
  /** Time the agent "works" before sending, in ms; default 0. */
  replyDelayMs?: number;
  /** Request body cap, in bytes; default 1 MiB (request bodies are capped). */
  maxBodyBytes?: number;
  /** Called with each failure of the background work (answer, build or deliver). */
  onError?: (err: Error) => void;
}

/** One accepted (authenticated, well-formed) webhook delivery. */
export interface ReceivedWebhook {
  /** The `webhook-id`, or `token:<reply_token>` when the request had none. */
  id: string;
  envelope: Envelope;
  /** Request headers, lower-case names, repeated values joined with `, `. */
  headers: Record<string, string>;
  /** True for a retry of an id seen before (no reply is produced for it). */
  duplicate: boolean;
  /** Arrival time, ms since the epoch. */
  at: number;
}

export interface CloudAgent {
  /** `http://127.0.0.1:<port><path>`: the webhook URL for the bridge's config. */
  url: string;
  received: ReceivedWebhook[];
  /** Raw bytes of every delivered reply, in delivery order. */
  replies: Buffer[];
  /** Failures of the background work. */
  errors: Error[];
  /** Resolves when every accepted envelope has been answered (or has failed). */
  idle(): Promise<void>;
  /** Stops listening, drops connections, cancels replies still waiting for their delay. */
  close(): Promise<void>;
}

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** The demo's deterministic "research result": echoes the ask so a round trip can be checked. */
export function defaultAnswer(e: Envelope): Promise<AgentAnswer> {
  const ask = e.ask.trim();
  return Promise.resolve({
    status: 'done',
    text: [
      `Research result for: ${ask.length > 200 ? `${ask.slice(0, 200)}...` : ask}`,
      '',
      'Summary: this is a simulated answer from the a2a-mailbridge demo agent. It echoes your',
      'request so that the round trip (webhook, agent, signed email, bridge) can be checked.',
      '',
      `- task: ${e.task_id}, turn ${e.turn}`,
      `- asked by: ${e.from}`,
      `- earlier turns received: ${e.thread.length}`,
    ].join('\n'),
  });
}

/**
 * Checks that a parsed JSON value has the envelope's shape (docs/architecture.md, "The webhook
 * envelope"). Returns the reason it does not, or null.
 */
export function envelopeProblem(v: unknown): string | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'the body is not a JSON object';
  const e = v as Record<string, unknown>;
  if (e.v !== 1) return 'v must be 1';
  for (const k of ['task_id', 'from', 'ask', 'constraints', 'deadline', 'reply_to', 'subject_tag'] as const) {
    if (typeof e[k] !== 'string') return `${k} must be a string`;
  }
  if (!Number.isInteger(e.turn) || (e.turn as number) < 1) return 'turn must be a positive integer';
  if (typeof e.reply_token !== 'string' || !/^[0-9a-f]{32}$/.test(e.reply_token)) return 'reply_token must be 32 lowercase hex';
  if (!Array.isArray(e.thread)) return 'thread must be an array';
  if (!/^[^\s@<>]+@[^\s@<>]+$/.test(e.reply_to as string)) return 'reply_to must be an address';
  if (e.cancel !== undefined && e.cancel !== true) return 'cancel must be true when present';
  return null;
}

/** Constant-time string compare; hashing first makes the lengths equal (no length leak). */
function sameSecret(a: string, b: string): boolean {
  const h = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();
  return timingSafeEqual(h(a), h(b));
}

function flatHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

/** Reads the body; null when it exceeds `max` bytes (the rest is discarded, not buffered). */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        req.removeAllListeners('data');
        req.resume();
        resolve(null);
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: Record<string, unknown>, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/**
 * A Subject of the form `Re: <anything> <tag>` (docs/architecture.md, "The reply format"), ASCII so
 * the tag is never encoded.
 */
function replySubject(e: Envelope): string {
  const first = e.ask.split('\n')[0]!.replace(/\s+/g, ' ').trim();
  const snippet = /^[\x20-\x7e]{1,60}$/.test(first) && !first.includes('[') ? first : 'your request';
  return `Re: ${snippet} ${e.subject_tag}`;
}

/**
 * Starts the agent's webhook server and resolves once it listens.
 *
 * @throws TypeError when neither `bearer` nor `signingSecret` is given, or the secret is not a
 *   valid `whsec_` secret (the library throws on a trailing newline: trim secrets read from files).
 */
export async function startCloudAgent(o: CloudAgentOptions): Promise<CloudAgent> {
  if (!o.bearer && !o.signingSecret) throw new TypeError('startCloudAgent: give bearer, signingSecret or both');
  let webhook: Webhook | undefined;
  if (o.signingSecret !== undefined) {
    try {
      webhook = new Webhook(o.signingSecret);
    } catch (err) {
      throw new TypeError('startCloudAgent: signingSecret must be "whsec_" + base64 with no whitespace', { cause: err });
    }
  }
  const host = o.host ?? '127.0.0.1';
  const path = o.path ?? '/hook';
  const maxBody = o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const answer = o.answer ?? defaultAnswer;
  const domain = o.address.slice(o.address.lastIndexOf('@') + 1);
  const provider: ProviderStamp = o.provider ?? {
    mxHost: 'mx1.messagingengine.com',
    authservId: 'mx1.messagingengine.com',
    fromHost: `mail.${o.dkim.domain}`,
    fromIp: '192.0.2.25',
  };

  const received: ReceivedWebhook[] = [];
  const replies: Buffer[] = [];
  const errors: Error[] = [];
  const seen = new Set<string>();
  const pending = new Set<Promise<void>>();
  const timers = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();
  let closed = false;

  /** Resolves after `ms`, or at once when the agent closes. */
  const pause = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const entry = { timer: setTimeout(() => (timers.delete(entry), resolve()), ms), resolve };
      timers.add(entry);
    });

  const work = async (e: Envelope): Promise<void> => {
    await new Promise((r) => setImmediate(r)); // never run inside the request handler
    if (e.cancel) return; // a cancel notice expects no reply
    const a = await answer(e);
    if (!a || closed) return;
    if (o.replyDelayMs) await pause(o.replyDelayMs);
    if (closed) return;
    const raw = await buildReplyMail({
      from: `${o.displayName ?? 'Demo Cloud Agent'} <${o.address}>`,
      to: e.reply_to,
      subject: replySubject(e),
      messageId: `<${randomUUID()}@${domain}>`,
      token: e.reply_token,
      status: a.status,
      answer: a.text,
      ...(a.attachments ? { attachments: a.attachments } : {}),
      dkim: o.dkim,
      provider,
    });
    await o.deliver(raw);
    replies.push(raw);
  };

  const schedule = (e: Envelope): void => {
    const p: Promise<void> = work(e)
      .catch((err: unknown) => {
        const error = err instanceof Error ? err : new Error(String(err));
        errors.push(error);
        o.onError?.(error);
      })
      .finally(() => pending.delete(p));
    pending.add(p);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (new URL(req.url ?? '/', 'http://agent.invalid').pathname !== path) return send(res, 404, { error: 'not found' });
    if (req.method !== 'POST') return send(res, 405, { error: 'method not allowed' }, { allow: 'POST' });
    if (Number(req.headers['content-length'] ?? 0) > maxBody) {
      return send(res, 413, { error: `body over ${maxBody} bytes` }, { connection: 'close' });
    }
    if (o.bearer !== undefined) {
      const m = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? '');
      if (!m || !sameSecret(m[1]!, o.bearer)) {
        return send(res, 401, { error: 'bad bearer' }, { 'www-authenticate': 'Bearer' });
      }
    }
    const body = await readBody(req, maxBody);
    if (body === null) return send(res, 413, { error: `body over ${maxBody} bytes` }, { connection: 'close' });
    const headers = flatHeaders(req);
    const text = body.toString('utf8');
    let parsed: unknown;
    if (webhook) {
      try {
        // standardwebhooks' verify() JSON-parses the body after the signature matched.
        parsed = webhook.verify(text, {
          'webhook-id': headers['webhook-id'] ?? '',
          'webhook-timestamp': headers['webhook-timestamp'] ?? '',
          'webhook-signature': headers['webhook-signature'] ?? '',
        });
      } catch (err) {
        if (err instanceof WebhookVerificationError) return send(res, 401, { error: `bad signature: ${err.message}` });
        return send(res, 400, { error: 'the body is not JSON' });
      }
    } else {
      try {
        parsed = JSON.parse(text);
      } catch {
        return send(res, 400, { error: 'the body is not JSON' });
      }
    }
    const problem = envelopeProblem(parsed);
    if (problem) return send(res, 400, { error: problem });
    const envelope = parsed as Envelope;
    const id = headers['webhook-id'] ?? `token:${envelope.reply_token}`;
    const duplicate = seen.has(id);
    seen.add(id);
    received.push({ id, envelope, headers, duplicate, at: Date.now() });
    if (!duplicate && !closed) schedule(envelope);
    send(res, 202, { accepted: true, duplicate });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 500, { error: 'internal error' });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://${isIP(host) === 6 ? `[${host}]` : host}:${port}${path}`;

  const idle = async (): Promise<void> => {
    while (pending.size > 0) await Promise.allSettled([...pending]);
  };
  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    closed = true;
    for (const t of timers) {
      clearTimeout(t.timer);
      t.resolve();
    }
    timers.clear();
    const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await stopped;
    await idle();
  };
  return { url, received, replies, errors, idle, close: () => (closing ??= close()) };
}
