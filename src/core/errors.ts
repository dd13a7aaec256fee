/**
 * The errors the use cases raise for a caller's request, by stable code. They say what is wrong
 * with the request in words a calling model can act on; the A2A layer maps each code to its
 * JSON-RPC error in one table (src/a2a/errors.ts), the CLI prints the message.
 *
 * - `task-not-found`: no task with that id, or it belongs to another agent;
 * - `task-not-cancelable`: the task reached another terminal state first;
 * - `task-closed`: the task accepts no new work (a terminal task addressed by id, a retry of a
 *   task whose webhook was accepted);
 * - `invalid-request`: the request cannot be used as it is (a reused messageId, an empty new
 *   task, a taskId of another context, a page token this server did not issue);
 * - `limit-reached`: a per-agent cap of this bridge (`agents.max_open_tasks`,
 *   `agents.webhook.max_per_minute`) was reached; `details` names the key, its value and when to
 *   retry.
 */
export type BridgeErrorCode = 'task-not-found' | 'task-not-cancelable' | 'task-closed' | 'invalid-request' | 'limit-reached';

export interface BridgeErrorDetails {
  /** Machine-readable facts for the caller (the config key and value, an ISO retry time). */
  metadata?: Record<string, string>;
  /** When the same call may succeed, in whole seconds from now. */
  retryAfterSeconds?: number;
}

export class BridgeError extends Error {
  override readonly name = 'BridgeError';
  constructor(
    readonly code: BridgeErrorCode,
    message: string,
    readonly details: BridgeErrorDetails = {},
  ) {
    super(message);
  }
}
