/**
 * Whether the server can read a request's content by the headers that describe it, before any of
 * it is read: Content-Type must be JSON and Content-Encoding no coding but `identity`, else 415
 * (RFC 9110 §15.5.16; A2A v1.0 §9.5: ContentTypeNotSupportedError), answered with the connection
 * closing so the content is never read.
 *
 * A request with no content is not judged by them. RFC 9110 §8.3 and §8.4 make Content-Type and
 * Content-Encoding describe the representation the content carries, and §15.5.16 keeps 415 for
 * "content … in a format not supported": with no content there is nothing in a format, nothing to
 * decode, and the request means the same whatever those headers say (an HTTP+JSON CancelTask needs
 * no body). Its presence is signalled by Content-Length or Transfer-Encoding (RFC 9110 §6.4.1); a
 * request with neither has none (RFC 9112 §6.3), and `Content-Length: 0` is empty content.
 */
import { A2AError } from './errors.js';
import type { RequestFields } from './request-fields.js';

/** The fields that say whether there is content and how it is written. */
type ContentFields = Pick<RequestFields, 'transfer-encoding' | 'content-length' | 'content-type' | 'content-encoding'>;

/**
 * The headers of an answer given before the request's body was read (401, 415, a version refused
 * over REST): the connection closes after it, so a body the caller still sends is never read (a
 * 400 MiB body was read whole to keep the connection).
 */
export const UNREAD = { connection: 'close' } as const;
const ACCEPT_IDENTITY = { 'accept-encoding': 'identity', ...UNREAD } as const;

/** `application/json` or a `+json` type such as `application/a2a+json`, with parameters. */
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/** A Transfer-Encoding that names no coding but `chunked` (case-insensitive, RFC 9112 §7). */
const CHUNKED_ONLY = /^[\s,]*(?:chunked\s*(?:,[\s,]*|$))*$/i;

/** A Content-Encoding that names no coding but `identity` (case-insensitive, RFC 9110 §8.4.1): the body is as sent. */
const IDENTITY_ONLY = /^[\s,]*(?:identity\s*(?:,[\s,]*|$))*$/i;

/** Whether the request carries content, however short (module comment). */
export function hasContent(headers: ContentFields): boolean {
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = headers['content-length'];
  return length !== undefined && Number(length) !== 0;
}

/**
 * Why the server cannot read the request's content, with the status and headers of the answer
 * that says so; null when it can, or when there is no content. A transfer coding other than
 * `chunked` (`Transfer-Encoding: gzip, chunked`: node:http takes the chunks off, not the gzip) is
 * 501 (RFC 9112 §6.1: a server that does not understand a transfer coding SHOULD answer 501); the
 * rest is 415, and the error for a content coding comes with `accept-encoding: identity` (RFC 9110
 * §12.5.3). The caller's texts are cut to 80 characters.
 */
export function unsupportedContent(headers: ContentFields): { status: 415 | 501; error: A2AError; headers: Record<string, string> } | null {
  if (!hasContent(headers)) return null;
  const transfer = headers['transfer-encoding'];
  if (transfer !== undefined && !CHUNKED_ONLY.test(transfer)) {
    return { status: 501, error: new A2AError('invalidRequest', `Transfer-Encoding ${transfer.slice(0, 80)} is not implemented; send the body with chunked or a Content-Length`), headers: UNREAD };
  }
  const type = headers['content-type'];
  if (type !== undefined && !JSON_TYPE.test(type)) {
    return { status: 415, error: new A2AError('contentTypeNotSupported', `Content-Type ${type.slice(0, 80)} is not supported; send application/json`), headers: UNREAD };
  }
  const coding = headers['content-encoding'];
  if (coding !== undefined && !IDENTITY_ONLY.test(coding)) {
    return { status: 415, error: new A2AError('contentTypeNotSupported', `Content-Encoding ${coding.slice(0, 80)} is not supported; send the body uncompressed`), headers: ACCEPT_IDENTITY };
  }
  return null;
}
