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

/**
 * imapflow's own names for how a connection ended, which say nothing to an operator, in words
 * (the code kept in parentheses, to search for). System codes (ECONNREFUSED…) are left as they are:
 * they are the ones every tool prints. Fresh-user trial 12: doctor said only "failed:
 * ClosedAfterConnectText" of a server that closed each connection before its greeting.
 */
const IMAPFLOW_CLOSES: Readonly<Record<string, string>> = {
  ClosedAfterConnectText:
    'the server closed the connection before its greeting, without TLS (it refused this client: its own log says why; or it expects TLS on this port: mailbox.imap.tls = true)',
  ClosedAfterConnectTLS: 'the server closed the connection right after the TLS handshake, before its greeting (its own log says why)',
  NoConnection: 'the connection was closed before the command could be sent',
  EConnectionClosed: 'the server closed the connection',
};

/** How a connection failed, for a message: {@link IMAPFLOW_CLOSES}'s words for imapflow's codes, else the code itself. */
export function connectCause(code: string): string {
  const words = IMAPFLOW_CLOSES[code];
  return words === undefined ? code : `${words} (${code})`;
}
