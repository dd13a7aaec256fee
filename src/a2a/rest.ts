import { ERROR_DOMAIN, ERROR_INFO_TYPE, BRIDGE_ERROR_DOMAIN, ERRORS, RETRY_INFO_TYPE, type A2AError, type ErrorKind } from './errors.js';

/**
 * The HTTP+JSON binding of A2A v1.0 (§11) on the same handler as JSON-RPC: each route names the
 * v1.0 method it is (§11.3) and where its params come from — the body for POST, the path and the
 * query for GET and DELETE (§11.5: camelCase names, booleans and numbers as strings). Errors are
 * AIP-193 `{error: {code, status, message, details}}` with the HTTP status of §5.4 and one
 * `google.rpc.ErrorInfo` (§11.6). Routes are relative to the agent's interface URL
 * (`/agents/<name>`), which the card declares for both bindings.
 */

/** A route resolved: the v1.0 method, its params without the body, and whether the body (a JSON object) is merged in. */
export interface RestCall {
  method: string;
  params: Record<string, unknown>;
  /** POST routes read their params from the body. */
  body: boolean;
}

/** Query parameters read as numbers or booleans (§11.5 "Field Type Handling"); the rest stay strings. */
const NUMBERS = new Set(['historyLength', 'pageSize']);
const BOOLEANS = new Set(['includeArtifacts']);

function queryParams(url: URL): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of url.searchParams) {
    if (k === 'A2A-Version') continue;
    if (NUMBERS.has(k)) out[k] = /^-?\d+$/.test(v) ? Number(v) : v;
    else if (BOOLEANS.has(k)) out[k] = v === 'true' ? true : v === 'false' ? false : v;
    // `status=working` (§11.5's example) and `status=TASK_STATE_WORKING` both name a TaskState.
    else if (k === 'status' && v !== '' && !v.startsWith('TASK_STATE_')) out[k] = `TASK_STATE_${v.toUpperCase().replace(/-/g, '_')}`;
    else out[k] = v;
  }
  return out;
}

function decode(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/**
 * The call an HTTP+JSON request makes, or null when no route matches (404). `path` is what
 * follows the agent's base path, e.g. `/tasks/<id>:cancel`.
 * @returns `{ allow }` instead when the path exists but not for this HTTP method (405)
 */
export function routeRest(httpMethod: string, path: string, url: URL): RestCall | { allow: string } | null {
  const get = httpMethod === 'GET' || httpMethod === 'HEAD';
  const q = queryParams(url);
  const route = (allowed: string, call: RestCall): RestCall | { allow: string } =>
    allowed.split(', ').includes(get ? 'GET' : httpMethod) ? call : { allow: allowed };

  if (path === '/message:send') return route('POST', { method: 'SendMessage', params: {}, body: true });
  if (path === '/message:stream') return route('POST', { method: 'SendStreamingMessage', params: {}, body: true });
  if (path === '/extendedAgentCard') return route('GET', { method: 'GetExtendedAgentCard', params: {}, body: false });
  if (path === '/tasks') return route('GET', { method: 'ListTasks', params: q, body: false });

  const m = /^\/tasks\/([^/]+?)(?::(cancel|subscribe))?(?:\/pushNotificationConfigs(?:\/([^/]+))?)?$/.exec(path);
  if (!m) return null;
  const id = decode(m[1]!);
  const configId = m[3] === undefined ? undefined : decode(m[3]);
  if (id === null || configId === null || id === '') return null;
  const verb = m[2];
  const configs = path.includes('/pushNotificationConfigs');
  if (verb && configs) return null;
  if (verb === 'cancel') return route('POST', { method: 'CancelTask', params: { id }, body: true });
  // §11.3.2 says POST; the a2a-js SDK's REST transport sends GET (the proto's http rule).
  if (verb === 'subscribe') return route('GET, POST', { method: 'SubscribeToTask', params: { id }, body: false });
  if (configs && configId === undefined) {
    return httpMethod === 'POST'
      ? { method: 'CreateTaskPushNotificationConfig', params: { taskId: id }, body: true }
      : route('GET, POST', { method: 'ListTaskPushNotificationConfigs', params: { ...q, taskId: id }, body: false });
  }
  if (configs) {
    return httpMethod === 'DELETE'
      ? { method: 'DeleteTaskPushNotificationConfig', params: { taskId: id, id: configId }, body: false }
      : route('GET, DELETE', { method: 'GetTaskPushNotificationConfig', params: { taskId: id, id: configId }, body: false });
  }
  return route('GET', { method: 'GetTask', params: { ...q, id }, body: false });
}

/** The HTTP status and google.rpc.Code name of each error (A2A v1.0 §5.4; the JSON-RPC ones by their meaning). */
const HTTP: Record<ErrorKind, [number, string]> = {
  parseError: [400, 'INVALID_ARGUMENT'],
  invalidRequest: [400, 'INVALID_ARGUMENT'],
  methodNotFound: [404, 'NOT_FOUND'],
  invalidParams: [400, 'INVALID_ARGUMENT'],
  internalError: [500, 'INTERNAL'],
  taskNotFound: [404, 'NOT_FOUND'],
  taskNotCancelable: [409, 'FAILED_PRECONDITION'],
  pushNotificationNotSupported: [400, 'UNIMPLEMENTED'],
  unsupportedOperation: [400, 'UNIMPLEMENTED'],
  contentTypeNotSupported: [415, 'INVALID_ARGUMENT'],
  extendedAgentCardNotConfigured: [400, 'FAILED_PRECONDITION'],
  versionNotSupported: [400, 'UNIMPLEMENTED'],
  limitReached: [429, 'RESOURCE_EXHAUSTED'],
};

/**
 * An error as AIP-193 JSON with its HTTP status (A2A v1.0 §11.6). `error.code` is always the HTTP
 * status the body is sent with (AIP-193).
 * @param httpStatus the status when the transport, not the error's kind, decides it (413: a body
 *   over `server.max_body_bytes`); default the kind's status of §5.4
 */
export function restError(err: A2AError, httpStatus?: number): { status: number; body: { error: { code: number; status: string; message: string; details: Record<string, unknown>[] } } } {
  const [kindStatus, code] = HTTP[err.kind];
  const status = httpStatus ?? kindStatus;
  const domain = err.kind === 'limitReached' ? BRIDGE_ERROR_DOMAIN : ERROR_DOMAIN;
  const details: Record<string, unknown>[] = [{ '@type': ERROR_INFO_TYPE, reason: ERRORS[err.kind].reason, domain, ...(err.metadata ? { metadata: err.metadata } : {}) }];
  if (err.retryAfterSeconds !== undefined) details.push({ '@type': RETRY_INFO_TYPE, retryDelay: `${err.retryAfterSeconds}s` });
  return { status, body: { error: { code: status, status: code, message: err.message, details } } };
}
