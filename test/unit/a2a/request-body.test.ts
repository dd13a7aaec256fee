import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { collectBody, readBody } from '../../../src/a2a/request-body.js';

/** A request stand-in: a stream of body chunks with the field lines collectBody reads (`rawHeaders`, as node:http's parser gives them). */
function request(headers: Record<string, string> = {}): PassThrough & IncomingMessage {
  return Object.assign(new PassThrough(), { rawHeaders: Object.entries(headers).flat() }) as unknown as PassThrough & IncomingMessage;
}

/** Runs collectBody and records every call of its two callbacks, in order. */
function collect(req: IncomingMessage, limit: number): { calls: string[]; ended: Promise<void> } {
  const calls: string[] = [];
  let settle!: () => void;
  const ended = new Promise<void>((r) => (settle = r));
  collectBody(
    req,
    limit,
    (body) => {
      calls.push(body === null ? 'over' : `body:${body.toString()}`);
      settle();
    },
    (err) => {
      calls.push(`failed:${err.message}`);
      settle();
    },
  );
  return { calls, ended };
}

describe('collectBody (the request body, at most server.max_body_bytes, reported once)', () => {
  it('one chunk, several chunks, none: the whole body once', async () => {
    for (const chunks of [['{"a":1}'], ['{"a"', ':', '1}'], []]) {
      const req = request();
      const c = collect(req, 100);
      for (const x of chunks) req.write(x);
      req.end();
      await c.ended;
      expect(c.calls).toEqual([`body:${chunks.join('')}`]);
    }
  });

  it('a declared Content-Length over the limit: null at once, nothing read', () => {
    const req = request({ 'content-length': '101' });
    const c = collect(req, 100);
    expect(c.calls).toEqual(['over']);
  });

  it('a body found over the limit as it comes: null once, and neither the rest nor a later error is reported', async () => {
    const req = request();
    const c = collect(req, 10);
    req.write('0123456789');
    req.write('x');
    await c.ended;
    req.write('more and more');
    const closed = new Promise((r) => req.once('close', r));
    req.destroy(new Error('reset'));
    await closed;
    expect(c.calls).toEqual(['over']);
  });

  it('an error before the end: failed once, never a body', async () => {
    const req = request();
    const c = collect(req, 100);
    req.write('{"a"');
    req.destroy(new Error('aborted'));
    await c.ended;
    expect(c.calls).toEqual(['failed:aborted']);
  });

  it('readBody: the same as a promise', async () => {
    const req = request();
    const body = readBody(req, 100);
    req.end('{}');
    expect((await body)?.toString()).toBe('{}');
    const big = request({ 'content-length': '5000' });
    expect(await readBody(big, 100)).toBeNull();
  });
});
