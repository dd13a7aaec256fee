import { createServer } from 'node:net';

/**
 * A loopback TCP port that was free a moment ago (something else may take it before the caller
 * binds it: callers that can lose that race retry).
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
