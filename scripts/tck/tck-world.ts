/**
 * What both conformance scripts run the kits against: the demo's world (src/demo/world.ts: a
 * temporary config with 0600 secrets, a DNS zone with the agent's DKIM key, a Maildir, the bridge
 * with `mailbox.watch = true`) with a scripted cloud agent that follows the kits' message-id
 * conventions, and a proxy that adds the bridge's bearer and does nothing else.
 *
 * The scripted agent is a real far side: it receives the bridge's signed webhook (the demo agent
 * verifies the Standard Webhooks signature and the bearer), reads the task's newest message id
 * from the bridge over A2A (GetTask with history, with the bearer, as any caller would: the
 * envelope carries the text, not the A2A message id), and mails a DKIM-signed reply whose status
 * and text the id's prefix names (the kit's scenarios/*.feature): `tck-complete-task` done,
 * `tck-input-required` input-required, `tck-reject-task` failed, `tck-artifact-text` done with its
 * text, `tck-artifact-file` / `tck-artifact-data` done with an attached output.txt / JSON, `test-resubscribe-message-id` done after 20 s, every other prefix done.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { AgentAnswer } from '../../src/demo/cloud-agent.js';
import { startDemoWorld, type DemoWorld } from '../../src/demo/world.js';
import type { Envelope } from '../../src/downlink/envelope.js';

/** The reply a kit scenario asks for, by the prefix of the message id (the kit's scenarios/*.feature). */
export function tckAnswer(messageId: string): AgentAnswer & { delayMs: number } {
  const has = (p: string): boolean => messageId.startsWith(p);
  if (has('tck-input-required')) return { status: 'input-required', text: 'Please provide more input', delayMs: 0 };
  if (has('tck-reject-task')) return { status: 'failed', text: 'rejected', delayMs: 0 };
  if (has('tck-artifact-text')) return { status: 'done', text: 'Generated text content', delayMs: 0 };
  // The bridge makes no URL file parts (docs/agent-text.md: files come as attachments, bytes inline): the agent sends the link as text.
  if (has('tck-artifact-file-url')) return { status: 'done', text: 'https://example.com/output.txt', delayMs: 0 };
  if (has('tck-artifact-file')) return { status: 'done', text: 'The file is attached.', attachments: [{ filename: 'output.txt', contentType: 'text/plain', content: 'file content' }], delayMs: 0 };
  if (has('tck-artifact-data')) return { status: 'done', text: 'The data is attached.', attachments: [{ filename: 'data.json', contentType: 'application/json', content: '{"key": "value", "count": 42}' }], delayMs: 0 };
  if (has('tck-message-response')) return { status: 'done', text: 'Direct message response', delayMs: 0 };
  if (has('tck-stream-artifact-chunked')) return { status: 'done', text: 'chunk-1 chunk-2', delayMs: 0 };
  if (has('tck-stream-artifact-text')) return { status: 'done', text: 'Streamed text content', delayMs: 0 };
  if (has('tck-stream-ordering')) return { status: 'done', text: 'Ordered output', delayMs: 0 };
  if (has('tck-stream-001')) return { status: 'done', text: 'Stream hello from TCK', delayMs: 0 };
  if (has('tck-stream-003')) return { status: 'done', text: 'Stream task lifecycle', delayMs: 0 };
  // "stream a status update to working, wait for 2x streaming timeout (10 s), completed"
  if (has('test-resubscribe-message-id')) return { status: 'done', text: 'Hello from TCK', delayMs: 20_000 };
  return { status: 'done', text: 'Hello from TCK', delayMs: 0 };
}

/** Answers each envelope as the kit's scenario for its task's newest message id says. */
function scriptedAnswer(endpoint: () => string, bearer: string, log: Logger): (e: Envelope) => Promise<AgentAnswer | null> {
  return async (e) => {
    const res = await fetch(endpoint(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}`, 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'agent', method: 'GetTask', params: { id: e.task_id, historyLength: 100 } }),
    });
    const task = ((await res.json()) as { result?: { history?: { role: string; messageId: string }[] } }).result;
    const asks = (task?.history ?? []).filter((m) => m.role === 'ROLE_USER');
    const messageId = asks.at(-1)?.messageId ?? '';
    const a = tckAnswer(messageId);
    log.info({ task: e.task_id, turn: e.turn, messageId, status: a.status }, 'scripted agent answers');
    if (a.delayMs > 0) await new Promise((r) => setTimeout(r, a.delayMs));
    return { status: a.status, text: a.text, ...(a.attachments ? { attachments: a.attachments } : {}) };
  };
}

export interface TckWorld {
  world: DemoWorld;
  /** The proxy: `http://127.0.0.1:<port>` (HTTP_PROXY for `forward`; the kit's base URL for `reverse`). */
  proxyUrl: string;
  /** Requests the proxy forwarded, and how many got the bearer added. */
  proxied: { requests: number; bearerAdded: number };
  stop(): Promise<void>;
}

/**
 * The proxy between a kit and the bridge, which adds `Authorization: Bearer <bearer>` to a request
 * that has none (the kits cannot send one) and changes nothing else: method, path, headers and
 * body are forwarded as they came (bodies piped, never read), responses piped back untouched (SSE
 * streams pass as they come). No card substitution, no body rewriting.
 *
 * - `forward` (the v1.0 kit, whose httpx clients honour HTTP_PROXY): the kit sends absolute-form
 *   requests (RFC 9112 §3.2.2) here; only loopback targets are forwarded, and the bearer is added
 *   only to requests for the bridge.
 * - `reverse` (the v0.3 kit, whose JSON-RPC client ignores HTTP_PROXY): the kit is pointed at this
 *   address; requests go to the bridge with their Host unchanged, and the bridge's card names the
 *   URL it was reached by, so the kit's calls come back through here.
 */
export async function startBearerProxy(
  bridgeBase: string,
  bearer: string,
  mode: 'forward' | 'reverse',
): Promise<{ url: string; counts: { requests: number; bearerAdded: number }; close(): Promise<void> }> {
  const bridge = new URL(bridgeBase);
  const counts = { requests: 0, bearerAdded: 0 };
  const server: Server = createServer((req, res) => {
    let target: URL;
    if (mode === 'forward') {
      try {
        target = new URL(req.url ?? '');
      } catch {
        res.writeHead(400).end('absolute-form request URI expected');
        return;
      }
      if (!['127.0.0.1', 'localhost', '[::1]'].includes(target.hostname)) {
        res.writeHead(403).end('the proxy forwards to loopback only');
        return;
      }
    } else target = new URL(req.url ?? '/', bridgeBase);
    counts.requests += 1;
    const headers = { ...req.headers };
    delete headers['proxy-connection'];
    if (target.host === bridge.host && headers.authorization === undefined) {
      headers.authorization = `Bearer ${bearer}`;
      counts.bearerAdded += 1;
    }
    const up = httpRequest({ host: target.hostname, port: target.port, method: req.method, path: `${target.pathname}${target.search}`, headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`proxy: ${err.message}`);
    });
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => ok());
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts,
    close: () =>
      new Promise<void>((ok) => {
        server.close(() => ok());
        server.closeAllConnections();
      }),
  };
}

/** The world, the scripted agent and the proxy; `serverToml`/`mailboxToml` add config lines (a baseline on older code passes fewer). */
export async function startTckWorld(o: { log: Logger; serverToml: string; mailboxToml?: string; proxy: 'forward' | 'reverse' }): Promise<TckWorld> {
  let endpoint = '';
  let bearer = '';
  const world = await startDemoWorld({
    name: 'a2a-mailbridge-tck',
    log: o.log,
    replyDelayMs: 200,
    mailboxToml: o.mailboxToml ?? 'watch = true\nwatch_tick_s = 1',
    // The kits send far more new tasks a minute than a person would (agents.max_open_tasks, max_per_minute).
    agentToml: 'max_open_tasks = 10000',
    webhookToml: 'max_per_minute = 10000',
    serverToml: o.serverToml,
    answer: (e) => scriptedAnswer(() => endpoint, bearer, o.log)(e),
  });
  endpoint = world.endpoint;
  bearer = world.bearer;
  const proxy = await startBearerProxy(world.app.server.baseUrl, world.bearer, o.proxy);
  return {
    world,
    proxyUrl: proxy.url,
    proxied: proxy.counts,
    async stop() {
      await proxy.close();
      await world.stop();
    },
  };
}
