import type { CheckRequest } from '../../src/uplink/mailbox.js';

/** The agent address the mailbox unit tests narrow on. */
export const CHECK_AGENT = 'agent@agent.example';

/**
 * A mailbox check request for unit tests of one reader: from the first message, the agent
 * {@link CHECK_AGENT}, Subject tags of the agent `grok`, 50 messages and 1 MiB each at most;
 * `over` replaces any of it.
 */
export function checkRequest(over: Partial<CheckRequest> = {}): CheckRequest {
  return {
    watermark: { uidValidity: null, lastUid: 0 },
    fromAddresses: [CHECK_AGENT],
    subjectContains: ['[GROK:'],
    maxFetch: 50,
    maxMessageBytes: 1024 * 1024,
    ...over,
  };
}
