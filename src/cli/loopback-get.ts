/**
 * One HTTP GET to the bridge's own loopback address, for the CLI's `/health` probe
 * (health-probe.ts): node:http, not `fetch`. `fetch` loads Node's bundled undici on its first call,
 * which costs a short-lived command more than the rest of its work: 40–80 ms against 5–10 ms for
 * node:http's first request (216–311 ms against 40–77 ms on a machine at load 10), and `status`,
 * `tasks`, `stop` and `doctor` each make this one call (bench/RESULTS.md, million: the read commands).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';

// node:http through require, not `import` (src/a2a/server.ts says why).
const { get } = createRequire(import.meta.url)('node:http') as typeof import('node:http');

/** The most body bytes read: a `/health` body is under 2 KiB; a program that took the address may send anything. */
export const MAX_PROBE_BODY_BYTES = 64 * 1024;

/** What answered: the status, and the body, or null when it ran past {@link MAX_PROBE_BODY_BYTES} (not read on). */
export interface LoopbackAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer | null;
}

/**
 * GET `url` with `headers`, the whole answer within `timeoutMs`.
 * @throws Error with `code` set to the socket's (ECONNREFUSED…), or `name` 'TimeoutError' when the
 *   answer did not arrive whole in time (the request is then destroyed)
 */
export function loopbackGet(url: string, headers: Record<string, string>, timeoutMs: number): Promise<LoopbackAnswer> {
  return new Promise((resolve, reject) => {
    const req = get(url, { headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_PROBE_BODY_BYTES) {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: null });
          req.destroy();
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
      });
      res.on('error', fail);
    });
    function fail(err: Error): void {
      clearTimeout(timer);
      reject(err);
    }
    const timer = setTimeout(() => {
      const err = new Error(`no answer within ${timeoutMs} ms`);
      err.name = 'TimeoutError';
      fail(err);
      req.destroy();
    }, timeoutMs);
    req.on('error', fail);
  });
}
