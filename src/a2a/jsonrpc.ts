import { JsonText } from './call.js';
import { A2AError, toJsonRpcError, type JsonRpcErrorObject } from './errors.js';
import { jsonBody } from './json-body.js';

/**
 * The JSON-RPC 2.0 envelope (JSON-RPC 2.0 §4–5). Batches and notifications are refused with
 * -32600: A2A defines neither, and a notification would dispatch work whose outcome nobody hears.
 */

export type JsonRpcId = string | number | null;

export interface JsonRpcRequest {
  id: JsonRpcId;
  method: string;
  params: unknown;
}

export type JsonRpcResponse =
  | { jsonrpc: '2.0'; id: JsonRpcId; result: unknown }
  | { jsonrpc: '2.0'; id: JsonRpcId; error: JsonRpcErrorObject };

/**
 * Parses a request body. `isMethod` tells a known method name (a notification of an unknown one is
 * answered -32601 rather than -32600).
 * @returns the request, or an error response ready to send (-32700 bad JSON or a body that is not
 *   valid UTF-8, -32600 bad envelope)
 */
export function parseRequest(body: Buffer, dialect: '1.0' | '0.3', isMethod: (name: string) => boolean = () => true): JsonRpcRequest | JsonRpcResponse {
  const parsed = jsonBody(body);
  if ('error' in parsed) return errorResponse(null, new A2AError('parseError', `Parse error: ${parsed.error}`), dialect);
  const doc = parsed.doc;
  if (Array.isArray(doc)) return errorResponse(null, new A2AError('invalidRequest', 'batch requests are not supported'), dialect);
  if (typeof doc !== 'object' || doc === null) {
    return errorResponse(null, new A2AError('invalidRequest', 'the request must be a JSON-RPC 2.0 object'), dialect);
  }
  const r = doc as Record<string, unknown>;
  const id = r.id;
  const idOk = typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) || id === null;
  const safeId: JsonRpcId = idOk ? id : null;
  if (r.jsonrpc !== '2.0') return errorResponse(safeId, new A2AError('invalidRequest', 'jsonrpc must be "2.0"'), dialect);
  // A notification of a method that does not exist is answered as such first (what it asked for cannot be done either way).
  if (!('id' in r) && typeof r.method === 'string' && r.method !== '' && !isMethod(r.method)) {
    return errorResponse(null, new A2AError('methodNotFound', `Method not found: ${r.method.slice(0, 80)}`), dialect);
  }
  if (!('id' in r) || !idOk) {
    return errorResponse(null, new A2AError('invalidRequest', 'id must be a string, a number or null (notifications are not supported)'), dialect);
  }
  if (typeof r.method !== 'string' || r.method.length === 0) {
    return errorResponse(safeId, new A2AError('invalidRequest', 'method must be a non-empty string'), dialect);
  }
  if (r.params !== undefined && (typeof r.params !== 'object' || r.params === null)) {
    return errorResponse(safeId, new A2AError('invalidParams', 'params must be an object'), dialect);
  }
  return { id: safeId, method: r.method, params: r.params };
}

export function isResponse(x: JsonRpcRequest | JsonRpcResponse): x is JsonRpcResponse {
  return 'jsonrpc' in x;
}

export function resultResponse(id: JsonRpcId, result: unknown): JsonRpcResponse {
  return { jsonrpc: '2.0', id, result };
}

/**
 * The text of `resultResponse(id, result)`, byte for byte what `JSON.stringify` makes of it; a
 * {@link JsonText} result goes in as it is (a string concatenation, no serialisation).
 */
export function resultText(id: JsonRpcId, result: unknown): string {
  if (result instanceof JsonText) return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result.text}}`;
  return JSON.stringify(resultResponse(id, result));
}

/**
 * The bytes of `resultText(id, result)` for a {@link JsonText} result: the envelope's head written
 * once and the result's bytes (made once per view) copied after it, so no string of the whole
 * answer is built and then flattened and encoded again on every call (bench/RESULTS.md, machine-limit).
 */
export function resultBytes(id: JsonRpcId, result: JsonText): Buffer {
  const head = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`;
  const headLength = Buffer.byteLength(head);
  const body = result.bytes;
  // Every byte is written below: the head, the result, the closing brace.
  const out = Buffer.allocUnsafe(headLength + body.length + 1);
  out.write(head, 0, 'utf8');
  body.copy(out, headLength);
  out[out.length - 1] = 0x7d; // }
  return out;
}

export function errorResponse(id: JsonRpcId, err: A2AError, dialect: '1.0' | '0.3'): JsonRpcResponse {
  return { jsonrpc: '2.0', id, error: toJsonRpcError(err, dialect) };
}
