import type { IncomingMessage } from 'node:http';

/**
 * The request's header fields that the server reads, taken from `rawHeaders` in one pass.
 *
 * node:http builds `req.headers` on its first read: an object holding every field under its
 * lower-cased name, with a property store per field. That costs about 5,000 instructions a
 * request, where this pass costs about 1,800 (bench/RESULTS.md, "instructions"); GetTask reads
 * these fields on every call. The values are the ones `req.headers` gives, by node's rules
 * (lib/_http_incoming.js, `matchKnownFields`): names match in any case; a repeated Host,
 * Authorization, User-Agent, Content-Type or Content-Length keeps its first value; a repeated
 * Transfer-Encoding, Content-Encoding or A2A-Version (a field node does not know) is joined with
 * ", ". test/unit/a2a/request-fields.test.ts holds this against `req.headers` itself.
 */
export interface RequestFields {
  host: string | undefined;
  authorization: string | undefined;
  'user-agent': string | undefined;
  'content-type': string | undefined;
  'content-length': string | undefined;
  'transfer-encoding': string | undefined;
  'content-encoding': string | undefined;
  'a2a-version': string | undefined;
  /** How many Host field lines the request has (RFC 9112 §3.2: more than one is a 400). */
  hostLines: number;
}

/** Where {@link requestFields} keeps a request's fields once read. */
const FIELDS = Symbol('a2a-mailbridge.requestFields');

type WithFields = IncomingMessage & { [FIELDS]?: RequestFields };

/** Whether `name` is `lower` in any case (`lower` is lower-case; same length checked by the caller). */
function named(name: string, lower: string): boolean {
  return name === lower || name.toLowerCase() === lower;
}

/** Joins a repeated field's value on, as node does for a field whose values make a list. */
function joined(was: string | undefined, value: string): string {
  return was === undefined ? value : `${was}, ${value}`;
}

/**
 * The fields of `req` (module comment), read from `rawHeaders` on the first call and kept on the
 * request for the calls after it. Never throws.
 */
export function requestFields(req: IncomingMessage): RequestFields {
  const kept = (req as WithFields)[FIELDS];
  if (kept !== undefined) return kept;
  const f: RequestFields = {
    host: undefined,
    authorization: undefined,
    'user-agent': undefined,
    'content-type': undefined,
    'content-length': undefined,
    'transfer-encoding': undefined,
    'content-encoding': undefined,
    'a2a-version': undefined,
    hostLines: 0,
  };
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    switch (name.length) {
      case 4:
        if (named(name, 'host')) {
          f.hostLines++;
          f.host ??= value;
        }
        break;
      case 10:
        if (named(name, 'user-agent')) f['user-agent'] ??= value;
        break;
      case 11:
        if (named(name, 'a2a-version')) f['a2a-version'] = joined(f['a2a-version'], value);
        break;
      case 12:
        if (named(name, 'content-type')) f['content-type'] ??= value;
        break;
      case 13:
        if (named(name, 'authorization')) f.authorization ??= value;
        break;
      case 14:
        if (named(name, 'content-length')) f['content-length'] ??= value;
        break;
      case 16:
        if (named(name, 'content-encoding')) f['content-encoding'] = joined(f['content-encoding'], value);
        break;
      case 17:
        if (named(name, 'transfer-encoding')) f['transfer-encoding'] = joined(f['transfer-encoding'], value);
        break;
    }
  }
  (req as WithFields)[FIELDS] = f;
  return f;
}
