import { isUtf8 } from 'node:buffer';

/**
 * The JSON document of a request body, or why it has none: the one reading both bindings
 * (JSON-RPC, src/a2a/jsonrpc.ts; HTTP+JSON, src/a2a/server.ts) make of their bytes, so neither can
 * take a body the other refuses.
 *
 * JSON text exchanged between systems must be UTF-8 (RFC 8259 §8.1): bytes that are not are
 * refused rather than decoded, which would turn them into U+FFFD and store and dispatch text the
 * caller never sent.
 * @param body the request body as received (any length; not empty for HTTP+JSON, whose empty body
 *   means no fields)
 * @returns `{ doc }` the parsed value (any JSON type), or `{ error }` a sentence for a parse error
 *   (-32700 in JSON-RPC, 400 INVALID_ARGUMENT over HTTP+JSON, docs/http-json.md)
 */
export function jsonBody(body: Buffer): { doc: unknown } | { error: string } {
  if (!isUtf8(body)) return { error: 'the body is not valid UTF-8 (RFC 8259 §8.1)' };
  try {
    return { doc: JSON.parse(body.toString('utf8')) };
  } catch {
    return { error: 'the body is not valid JSON' };
  }
}
