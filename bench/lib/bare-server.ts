/**
 * The reference of the machine-limit and instruction benches: a bare node:http server, in its
 * cheapest form (CommonJS `require`: on Node 26 an ES module `import` of node:http alone adds
 * about 40 ms of CPU and 12 MiB, see src/a2a/server.ts). It reads the request body (as any
 * JSON-RPC server must) and answers with fixed bytes: `BARE_BODY` (the bridge's GetTask answer)
 * on every path but `/health`. Run as `node -e BARE_SERVER` with `BARE_BODY` and `BARE_PORT` in
 * the environment.
 */
export const BARE_SERVER = `
const { createServer } = require('node:http');
const body = process.env.BARE_BODY;
const health = '{"status":"ok"}';
createServer((req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(req.url === '/health' ? health : body);
  });
}).listen({ host: '127.0.0.1', port: Number(process.env.BARE_PORT) });
`;
