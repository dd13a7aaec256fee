import { BridgeError, type BridgeErrorCode } from '../core/errors.js';

/**
 * The JSON-RPC and A2A error table (A2A v1.0 §5.4 "Error handling", JSON-RPC 2.0 §5.1). One
 * place maps each error kind to its code and `google.rpc.ErrorInfo` reason, and each code the
 * core raises (src/core/errors.ts) to its kind. JSON-RPC errors travel with HTTP 200.
 */
export const ERRORS = {
  parseError: { code: -32700, reason: 'PARSE_ERROR', message: 'Parse error' },
  invalidRequest: { code: -32600, reason: 'INVALID_REQUEST', message: 'Invalid request' },
  methodNotFound: { code: -32601, reason: 'METHOD_NOT_FOUND', message: 'Method not found' },
  invalidParams: { code: -32602, reason: 'INVALID_PARAMS', message: 'Invalid params' },
  internalError: { code: -32603, reason: 'INTERNAL_ERROR', message: 'Internal error' },
  taskNotFound: { code: -32001, reason: 'TASK_NOT_FOUND', message: 'Task not found' },
  taskNotCancelable: { code: -32002, reason: 'TASK_NOT_CANCELABLE', message: 'Task cannot be canceled' },
  pushNotificationNotSupported: { code: -32003, reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED', message: 'Push notifications are not supported' },
  unsupportedOperation: { code: -32004, reason: 'UNSUPPORTED_OPERATION', message: 'This operation is not supported' },
  contentTypeNotSupported: { code: -32005, reason: 'CONTENT_TYPE_NOT_SUPPORTED', message: 'Incompatible content types' },
  extendedAgentCardNotConfigured: { code: -32007, reason: 'EXTENDED_AGENT_CARD_NOT_CONFIGURED', message: 'Extended Agent Card not configured' },
  versionNotSupported: { code: -32009, reason: 'VERSION_NOT_SUPPORTED', message: 'Version not supported' },
  /**
   * Not an A2A error: a per-agent cap of this bridge (agents.max_open_tasks,
   * agents.webhook.max_per_minute) was reached. A code from the range JSON-RPC 2.0 §5.1 leaves to
   * the application, away from the -32000…-32099 block A2A draws its codes from.
   */
  limitReached: { code: -31001, reason: 'LIMIT_REACHED', message: 'Limit reached' },
} as const;

export type ErrorKind = keyof typeof ERRORS;

/** The A2A error each core error code is answered with. */
const FROM_CORE: Record<BridgeErrorCode, ErrorKind> = {
  'task-not-found': 'taskNotFound',
  'task-not-cancelable': 'taskNotCancelable',
  // A2A v1.0 §3.1.1: new work sent by taskId to a task in a terminal state.
  'task-closed': 'unsupportedOperation',
  'invalid-request': 'invalidParams',
  'limit-reached': 'limitReached',
};

/** The `google.rpc.ErrorInfo` type URL and domain that v1.0 puts in `error.data`. */
export const ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo';
export const ERROR_DOMAIN = 'a2a-protocol.org';
/** The ErrorInfo domain of the errors that are this bridge's own, not A2A's (`limitReached`). */
export const BRIDGE_ERROR_DOMAIN = 'a2a-mailbridge';
/** google.rpc.RetryInfo (google/rpc/error_details.proto): how long to wait before retrying. */
export const RETRY_INFO_TYPE = 'type.googleapis.com/google.rpc.RetryInfo';

/** An error answered to the caller as a JSON-RPC error object. The message is shown to the calling model. */
export class A2AError extends Error {
  override readonly name = 'A2AError';
  constructor(
    readonly kind: ErrorKind,
    message?: string,
    readonly metadata?: Record<string, string>,
    /** When the same call may succeed, in whole seconds from now (sent as google.rpc.RetryInfo in v1.0). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message ?? ERRORS[kind].message);
  }
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/**
 * Renders an error for the wire. v1.0 carries an array holding one ErrorInfo in `data` (and a
 * google.rpc.RetryInfo when the error says when to retry); v0.3 has no ErrorInfo, so `data` is
 * omitted there and the message alone says it.
 */
export function toJsonRpcError(err: A2AError, dialect: '1.0' | '0.3'): JsonRpcErrorObject {
  const spec = ERRORS[err.kind];
  const out: JsonRpcErrorObject = { code: spec.code, message: err.message };
  if (dialect === '1.0') {
    const domain = err.kind === 'limitReached' ? BRIDGE_ERROR_DOMAIN : ERROR_DOMAIN;
    const details: Record<string, unknown>[] = [{ '@type': ERROR_INFO_TYPE, reason: spec.reason, domain, ...(err.metadata ? { metadata: err.metadata } : {}) }];
    if (err.retryAfterSeconds !== undefined) details.push({ '@type': RETRY_INFO_TYPE, retryDelay: `${err.retryAfterSeconds}s` });
    out.data = details;
  }
  return out;
}

/** The caller's error for anything a method handler threw: A2A errors as they are, core errors by the table; null for a defect. */
export function asA2AError(err: unknown): A2AError | null {
  if (err instanceof A2AError) return err;
  if (err instanceof BridgeError) return new A2AError(FROM_CORE[err.code], err.message, err.details.metadata, err.details.retryAfterSeconds);
  return null;
}
