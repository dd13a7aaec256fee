import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { hasContent } from './content-headers.js';
import { requestFields } from './request-fields.js';
import { answerBegun, answerEnded, answerWritten } from './connection-cap.js';

// node:http through require, not `import` (src/a2a/server.ts says why).
const { ServerResponse: NodeResponse } = createRequire(import.meta.url)('node:http') as typeof import('node:http');

/**
 * Every answer of the server. One given while the request's body has not arrived whole (a 403,
 * 404 or 405 decided by the head, a REST GET that carries a body) goes out with `Connection:
 * close` and the connection ends after it, so the rest of a body that may be huge is never read:
 * node:http otherwise reads and discards it to keep the connection (196 MiB in 5 s). An answer
 * after the whole body, or to a request with no content (content-headers.ts, `hasContent`),
 * keeps the connection. Decided when the head is written (`writeHead`, also the implicit one of
 * `end()`), so every route is covered, not only the statuses known today.
 */
class DoorAnswer extends NodeResponse {
  /** The size of the body's last chunk (`end(chunk)`): what the connection cap counts of this answer until 'finish'. */
  answerBytes = 0;
  /** Tracked by the connection cap (connection-cap.ts): busy until `end()`, unwritten until 'finish'; too many unwritten (or too many bytes of them) destroy the socket here. */
  constructor(req: IncomingMessage, options?: object) {
    super(...([req, options] as unknown as [IncomingMessage])); // node:http passes its options too; @types/node omits them
    if (answerBegun(req.socket)) this.on('finish', answerWritten);
  }
  override end(...args: unknown[]): this {
    if (!this.writableEnded) {
      const chunk = args[0];
      // A string counts its length (UTF-16 code units: no scan of a large answer; at most a third short of its bytes).
      this.answerBytes = typeof chunk === 'string' ? chunk.length : chunk instanceof Uint8Array ? chunk.byteLength : 0;
      if (!answerEnded(this.req.socket, this.answerBytes)) {
        // Its socket was closed for answers it does not read: this one is not queued behind them.
        this.answerBytes = 0;
        this.destroy();
        return this;
      }
    }
    return (super.end as (...more: unknown[]) => this)(...args);
  }
  override writeHead(statusCode: number, ...rest: unknown[]): this {
    if (!this.req.complete && hasContent(requestFields(this.req))) this.shouldKeepAlive = false;
    return (super.writeHead as (status: number, ...more: unknown[]) => this)(statusCode, ...rest);
  }
}

/**
 * The server's ServerResponse class (see {@link DoorAnswer}), typed as node:http's own, so a
 * `Server` made with it is the `Server` every API takes.
 */
export const DoorResponse = DoorAnswer as unknown as typeof NodeResponse;

/** What the connection cap counted of `res`'s body (0: an answer it refused to queue, or one not of {@link DoorResponse}). */
export function answerBytesOf(res: object): number {
  return res instanceof DoorAnswer ? res.answerBytes : 0;
}
