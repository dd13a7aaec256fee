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

/**
 * One route of the binding: the HTTP method, the path under the agent's URL with `{name}` for one
 * path segment (percent-decoded) that fills the param of that name, the v1.0 method (§11.3), and
 * where its other params come from — the JSON body (`body`), the query string (`query`), or
 * nowhere (`none`). docs/http-json.md lists the same table (test/unit/a2a/rest-routes.test.ts
 * holds the two together). GET also answers HEAD.
 */
export interface RestRoute {
  http: 'GET' | 'POST' | 'DELETE';
  path: string;
  method: string;
  params: 'body' | 'query' | 'none';
}

/** Every route the binding serves (A2A v1.0 §11.3), in the order docs/http-json.md lists them. */
export const REST_ROUTES: readonly RestRoute[] = [
  { http: 'POST', path: '/message:send', method: 'SendMessage', params: 'body' },
  { http: 'POST', path: '/message:stream', method: 'SendStreamingMessage', params: 'body' },
  { http: 'GET', path: '/tasks/{id}', method: 'GetTask', params: 'query' },
  { http: 'GET', path: '/tasks', method: 'ListTasks', params: 'query' },
  { http: 'POST', path: '/tasks/{id}:cancel', method: 'CancelTask', params: 'body' },
  // §11.3.2 says POST; the a2a-js SDK's REST transport sends GET (the proto's http rule).
  { http: 'GET', path: '/tasks/{id}:subscribe', method: 'SubscribeToTask', params: 'none' },
  { http: 'POST', path: '/tasks/{id}:subscribe', method: 'SubscribeToTask', params: 'none' },
  { http: 'POST', path: '/tasks/{taskId}/pushNotificationConfigs', method: 'CreateTaskPushNotificationConfig', params: 'body' },
  { http: 'GET', path: '/tasks/{taskId}/pushNotificationConfigs', method: 'ListTaskPushNotificationConfigs', params: 'query' },
  { http: 'GET', path: '/tasks/{taskId}/pushNotificationConfigs/{id}', method: 'GetTaskPushNotificationConfig', params: 'none' },
  { http: 'DELETE', path: '/tasks/{taskId}/pushNotificationConfigs/{id}', method: 'DeleteTaskPushNotificationConfig', params: 'none' },
  { http: 'GET', path: '/extendedAgentCard', method: 'GetExtendedAgentCard', params: 'none' },
];

/**
 * Each path of {@link REST_ROUTES} once, as a pattern: `{name}` matches one segment without `:`
 * (a `:` starts a custom method, AIP-136), so `/tasks/{id}` never takes `/tasks/x:cancel`.
 */
const PATHS = [...new Set(REST_ROUTES.map((r) => r.path))].map((path) => ({
  path,
  names: [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!),
  re: new RegExp(`^${path.split(/\{\w+\}/).map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('([^/:]+)')}$`),
}));

/** The order the methods of a 405's `Allow` are listed in. */
const HTTP_ORDER: readonly RestRoute['http'][] = ['GET', 'POST', 'DELETE'];

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
  const verb = httpMethod === 'HEAD' ? 'GET' : httpMethod;
  for (const p of PATHS) {
    const m = p.re.exec(path);
    if (!m) continue;
    const values = m.slice(1).map(decode);
    if (values.some((v) => v === null || v === '')) return null;
    const routes = REST_ROUTES.filter((r) => r.path === p.path);
    const route = routes.find((r) => r.http === verb);
    // A GET route answers HEAD too, so Allow names it (RFC 9110 §10.2.1: the methods the target supports).
    if (!route) return { allow: HTTP_ORDER.filter((h) => routes.some((r) => r.http === h)).flatMap((h) => (h === 'GET' ? ['GET', 'HEAD'] : [h])).join(', ') };
    const fromPath = Object.fromEntries(p.names.map((name, i) => [name, values[i]]));
    return { method: route.method, params: { ...(route.params === 'query' ? queryParams(url) : {}), ...fromPath }, body: route.params === 'body' };
  }
  return null;
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
