import fc from 'fast-check';
import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { requestFields, type RequestFields } from '../../../src/a2a/request-fields.js';

/** A request whose field lines are `raw` (name, value, name, value…), as node:http's parser hands them over. */
function requestWith(raw: string[]): IncomingMessage {
  const req = new IncomingMessage(new Socket());
  (req as unknown as { _addHeaderLines(h: string[], n: number): void })._addHeaderLines(raw, raw.length);
  return req;
}

const NAMES = ['host', 'authorization', 'user-agent', 'content-type', 'content-length', 'transfer-encoding', 'content-encoding', 'a2a-version'] as const;

/** What node's own `req.headers` gives for the fields requestFields reads, and the Host lines counted by name. */
function byNode(raw: string[]): RequestFields {
  const headers = requestWith(raw).headers;
  const picked = Object.fromEntries(NAMES.map((n) => [n, headers[n] as string | undefined])) as Omit<RequestFields, 'hostLines'>;
  let hostLines = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === 'host') hostLines++;
  return { ...picked, hostLines };
}

/** `name` with each letter's case chosen by `bits`. */
function cased(name: string, bits: number): string {
  return [...name].map((c, i) => ((bits >> i % 30) & 1 ? c.toUpperCase() : c)).join('');
}

describe('requestFields', () => {
  it('gives what req.headers gives: any case, first value of a repeated Host, Authorization or Content-Type, a repeated A2A-Version or Transfer-Encoding joined', () => {
    const raw = ['HOST', '127.0.0.1:1', 'Host', 'evil.example', 'AUTHORIZATION', 'Bearer a', 'authorization', 'Bearer b', 'A2A-Version', '1.0', 'a2a-version', '0.3', 'Transfer-Encoding', 'gzip', 'transfer-encoding', 'chunked', 'Content-Type', 'application/json', 'content-type', 'text/plain', 'X-Other', 'x'];
    const f = requestFields(requestWith(raw));
    expect(f).toEqual(byNode(raw));
    expect(f).toMatchObject({ host: '127.0.0.1:1', hostLines: 2, authorization: 'Bearer a', 'a2a-version': '1.0, 0.3', 'transfer-encoding': 'gzip, chunked', 'content-type': 'application/json' });
  });

  it('reads the field lines once and keeps them on the request', () => {
    const req = requestWith(['Host', 'localhost']);
    const first = requestFields(req);
    req.rawHeaders[1] = 'changed';
    expect(requestFields(req)).toBe(first);
    expect(first.host).toBe('localhost');
  });

  it('never builds req.headers', () => {
    const req = requestWith(['Host', 'localhost', 'Content-Length', '2']);
    let built = false;
    Object.defineProperty(req, 'headers', {
      get() {
        built = true;
        return {};
      },
    });
    requestFields(req);
    expect(built).toBe(false);
  });

  it('agrees with req.headers on any field lines (fast-check)', () => {
    const name = fc.oneof(
      fc.tuple(fc.constantFrom(...NAMES), fc.nat()).map(([n, bits]) => cased(n, bits)),
      fc.constantFrom('x-a2a-version', 'hosts', 'content-typ', 'Accept', 'Set-Cookie', 'Cookie'),
    );
    const value = fc.string({ maxLength: 12 });
    fc.assert(
      fc.property(fc.array(fc.tuple(name, value), { maxLength: 12 }), (lines) => {
        const raw = lines.flat();
        expect(requestFields(requestWith(raw))).toEqual(byNode(raw));
      }),
      { numRuns: 2000 },
    );
  });
});
