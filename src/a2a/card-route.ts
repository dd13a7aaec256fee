import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AgentConfig } from '../config/config.js';
import { agentCard, legacyAgentCard } from './agent-card.js';
import { supportedVersion } from './handler.js';
import { requestFields } from './request-fields.js';

/** How long a client may reuse a card without asking again, in seconds (A2A v1.0 §8.6.1). Cards change only when the bridge restarts with another config. */
export const CARD_MAX_AGE_S = 600;

/**
 * Which card a request gets (docs/discovery.md). The version is the `A2A-Version` header, or the
 * `A2A-Version` query parameter (A2A v1.0 §3.6.1); an empty one means 0.3 (§3.6.2). v1.x gets the
 * v1.0 card; anything else the v0.3 card with the v1.0 interfaces embedded. The legacy path
 * `agent.json` (A2A v0.2) always gets the v0.3 card.
 */
export function cardFor(req: IncomingMessage, url: URL, agent: AgentConfig, endpoint: string, legacyPath: boolean): { body: string; v1: boolean } {
  const asked = String(requestFields(req)['a2a-version'] ?? url.searchParams.get('A2A-Version') ?? '').trim();
  const v1 = !legacyPath && supportedVersion(asked) === '1.0';
  const card = v1 ? agentCard(agent, endpoint) : legacyAgentCard(agent, endpoint, { embedV1Interfaces: !legacyPath });
  return { body: JSON.stringify(card), v1 };
}

/** An HTTP-date (RFC 9110 §5.6.7) of `ms`, to the second. */
function httpDate(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toUTCString();
}

/**
 * Sends a card with the caching headers of A2A v1.0 §8.6.1 — a strong `ETag` (a hash of the
 * body), `Cache-Control` with `max-age`, `Last-Modified` (when the bridge started serving this
 * config) and `Vary: A2A-Version` (the body depends on it) — and answers a conditional GET
 * (`If-None-Match`, else `If-Modified-Since`) with 304 and no body (RFC 9110 §13.1.2, §13.1.3,
 * §15.4.5).
 */
export function sendCard(req: IncomingMessage, res: ServerResponse, body: string, servingSince: number): void {
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  const headers = {
    etag,
    'last-modified': httpDate(servingSince),
    'cache-control': `public, max-age=${CARD_MAX_AGE_S}`,
    vary: 'A2A-Version',
  };
  const inm = req.headers['if-none-match'];
  const ims = req.headers['if-modified-since'];
  const fresh =
    inm !== undefined
      ? inm.split(',').some((t) => {
          const tag = t.trim().replace(/^W\//, '');
          return tag === '*' || tag === etag;
        })
      : ims !== undefined && !Number.isNaN(Date.parse(ims)) && Math.floor(servingSince / 1000) * 1000 <= Date.parse(ims);
  if (fresh) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  res.writeHead(200, { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
  res.end(req.method === 'HEAD' ? undefined : body);
}
