import type { IncomingMessage } from 'node:http';
import { requestFields } from './request-fields.js';

/**
 * Reads the request body, at most `limit` bytes, and calls `done` once: with the body, or with
 * null when it is over `limit` (declared so, or found so as it comes; the rest is read and
 * dropped). `failed` gets the request's error (the client went away). Callbacks, not a promise:
 * a JSON-RPC call whose answer is at hand (GetTask while nothing is due) is answered in the turn
 * its body arrived, with no promise or microtask on the way (bench/RESULTS.md, machine-limit).
 */
export function collectBody(req: IncomingMessage, limit: number, done: (body: Buffer | null) => void, failed: (err: Error) => void): void {
  const declared = Number(requestFields(req)['content-length'] ?? 0);
  if (declared > limit) return done(null);
  let first: Buffer | null = null;
  let more: Buffer[] | null = null;
  let size = 0;
  /** Once `done` was called, nothing more is reported: the rest of an oversized body, or an error after the body. */
  let settled = false;
  req.on('data', (c: Buffer) => {
    if (settled) return;
    size += c.length;
    if (size > limit) {
      settled = true;
      first = more = null;
      done(null);
      req.resume();
    } else if (first === null) first = c;
    else (more ??= [first]).push(c);
  });
  req.on('end', () => {
    if (settled) return;
    settled = true;
    done(more ? Buffer.concat(more) : (first ?? Buffer.alloc(0)));
  });
  req.on('error', (err) => {
    if (settled) return;
    settled = true;
    failed(err);
  });
}

/** {@link collectBody} as a promise (the HTTP+JSON routes, which answer asynchronously anyway). */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => collectBody(req, limit, resolve, reject));
}
