import { createRequire } from 'node:module';
import type { ImapFlow, ImapFlowOptions } from 'imapflow';
import type { ImapConfig } from '../config/config.js';

// imapflow is loaded by the first IMAP connection, never by a Maildir configuration or a command
// that does not connect (memory and start-up: bench/RESULTS.md, machine-limit).
const require = createRequire(import.meta.url);

/**
 * A new imapflow client for one connection (an instance cannot reconnect) with the options every
 * connection of ours shares: the configured host, port and TLS (STARTTLS never attempted on a
 * plaintext port), our name only in ID (imapflow would otherwise fill in its own version and
 * vendor under our name), no automatic ENABLE, and the configured timeout for connecting and the
 * greeting. `o` adds or overrides the rest (logger, IDLE, socket timeout, size limits).
 */
export function imapClient(cfg: ImapConfig, auth: ImapFlowOptions['auth'], o: Partial<ImapFlowOptions> = {}): ImapFlow {
  const { ImapFlow: Client } = require('imapflow') as typeof import('imapflow');
  return new Client({
    host: cfg.host,
    port: cfg.port,
    secure: cfg.tls,
    doSTARTTLS: cfg.tls ? undefined : false,
    auth,
    logger: false,
    clientInfo: { name: 'a2a-mailbridge', version: false, vendor: false, 'support-url': false },
    disableAutoEnable: true,
    connectionTimeout: cfg.timeoutMs,
    greetingTimeout: cfg.timeoutMs,
    ...o,
  });
}
