/**
 * The loopback adapter of the `adapted` mode of scripts/conformance-tck.ts: forwards every request
 * to the bridge unchanged except that it adds the bearer where none was sent and answers
 * `/.well-known/agent-card.json` with the bridge's v0.3 card; it records each request for the report.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the adapter saw, for the report's evidence section. */
export interface AdapterHit {
  method: string;
  path: string;
  injected: boolean;
  status: number;
}

/**
 * The `adapted` mode's loopback adapter (see the header comment). Requests are forwarded to
 * `bridgeBase` with the Host header the bridge expects; only the two documented changes are made.
 */
export async function startAdapter(bridgeBase: string, bearer: string): Promise<{ base: string; hits: AdapterHit[]; close(): Promise<void> }> {
  const target = new URL(bridgeBase);
  const hits: AdapterHit[] = [];
  let base = '';
  const rewrite = (body: Buffer): Buffer => Buffer.from(body.toString('utf8').split(bridgeBase).join(base));

  const forward = (req: IncomingMessage, res: ServerResponse, path: string, mapBody?: (b: Buffer) => Buffer): void => {
    const headers = { ...req.headers, host: target.host };
    const injected = headers.authorization === undefined;
    if (injected) headers.authorization = `Bearer ${bearer}`;
    const hit: AdapterHit = { method: req.method ?? '?', path: req.url ?? '/', injected, status: 0 };
    hits.push(hit);
    const up = httpRequest({ host: target.hostname, port: target.port, method: req.method, path, headers }, (r) => {
      hit.status = r.statusCode ?? 0;
      if (!mapBody) {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
        return;
      }
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () => {
        const body = mapBody(Buffer.concat(chunks));
        const h = { ...r.headers, 'content-length': String(body.length) };
        delete h['transfer-encoding'];
        res.writeHead(r.statusCode ?? 502, h);
        res.end(body);
      });
    });
    up.on('error', (err) => {
      hit.status = 502;
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: `adapter: ${err.message}` }));
    });
    req.pipe(up);
  };

  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://adapter.invalid').pathname;
    if (path === '/.well-known/agent-card.json') return forward(req, res, '/.well-known/agent.json', rewrite);
    if (path.endsWith('/.well-known/agent-card.json') || path.endsWith('/.well-known/agent.json')) return forward(req, res, req.url ?? '/', rewrite);
    forward(req, res, req.url ?? '/');
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => ok());
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    hits,
    close: () =>
      new Promise<void>((ok) => {
        server.close(() => ok());
        server.closeAllConnections();
      }),
  };
}
