/**
 * The Node, socket and imapflow error codes that say how an IMAP connection failed, shared by
 * every IMAP reader (imap-mailbox.ts, newest-from.ts) so each maps a failure to the same
 * {@link MailboxError} kind.
 */
import { TOO_LARGE_CODES } from './imap-too-large.js';
import type { MailboxError } from './mailbox.js';

/** Node/socket error codes that mean the server could not be reached. */
export const CONNECT_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EADDRNOTAVAIL', 'EPIPE',
  'NoConnection', 'EConnectionClosed', 'ClosedAfterConnectText', 'ProxyError', 'EPROXY',
]);
/** Codes of a server that did not answer in time. */
export const TIMEOUT_CODES = new Set(['CONNECT_TIMEOUT', 'GREETING_TIMEOUT', 'UPGRADE_TIMEOUT', 'ETIMEOUT', 'ETIMEDOUT']);
/** Codes (by prefix) of a TLS handshake or certificate failure. */
export const TLS_CODE = /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|ClosedAfterConnectTLS)/;

/** The kind of a failure by its code alone: `protocol` when the code says nothing of the connection. */
export function kindOfCode(code: string | undefined, tlsFailed = false): MailboxError['kind'] {
  if (code && TIMEOUT_CODES.has(code)) return 'timeout';
  if (tlsFailed || (code && TLS_CODE.test(code))) return 'tls';
  if (code && TOO_LARGE_CODES.has(code)) return 'answer-too-large';
  if (code && CONNECT_CODES.has(code)) return 'connect';
  return 'protocol';
}
