import type { PushConfigInput } from '../core/push.js';
import { A2AError } from './errors.js';
import { asObject, field } from './params.js';

/**
 * Push notification configurations as callers send them: v1.0 TaskPushNotificationConfig (flat:
 * `taskId`, `id`, `url`, `token`, `authentication {scheme, credentials}`; A2A v1.0 §3.1.7) and
 * v0.3 TaskPushNotificationConfig (`taskId` + `pushNotificationConfig {id, url, token,
 * authentication {schemes[], credentials}}`; v0.3 §6.8–6.10). Every field is read in camelCase or
 * snake_case (ProtoJSON).
 */

type Obj = Record<string, unknown>;

const MAX_FIELD = 4096;

function optionalString(o: Obj, name: string, what: string): string | undefined {
  const v = field(o, name);
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string' || v.length > MAX_FIELD) throw new A2AError('invalidParams', `${what}.${name} must be a string of at most ${MAX_FIELD} characters`);
  return v;
}

function requiredString(o: Obj, name: string, what: string): string {
  const v = optionalString(o, name, what);
  if (v === undefined) throw new A2AError('invalidParams', `${what}.${name} is required`);
  return v;
}

/** The configuration fields of `c` (a v1.0 TaskPushNotificationConfig, or a v0.3 PushNotificationConfig). */
export function pushConfigOf(c: Obj, what: string, dialect: '1.0' | '0.3'): PushConfigInput {
  const auth = field(c, 'authentication');
  let authScheme: string | undefined;
  let authCredentials: string | undefined;
  if (auth !== undefined && auth !== null) {
    const a = asObject(auth, `${what}.authentication`);
    const schemes = field(a, 'schemes');
    if (Array.isArray(schemes)) {
      const first: unknown = schemes[0];
      if (first !== undefined && typeof first !== 'string') throw new A2AError('invalidParams', `${what}.authentication.schemes must be strings`);
      authScheme = first === '' ? undefined : first;
    } else authScheme = optionalString(a, 'scheme', `${what}.authentication`);
    authCredentials = optionalString(a, 'credentials', `${what}.authentication`);
  }
  return {
    id: optionalString(c, 'id', what),
    url: requiredString(c, 'url', what),
    token: optionalString(c, 'token', what),
    authScheme,
    authCredentials,
    dialect,
  };
}

/** v1.0 CreateTaskPushNotificationConfig params: the config flat, or (earlier drafts) under `config` / `pushNotificationConfig`. */
export function parseV1CreatePush(params: unknown): { taskId: string; config: PushConfigInput } {
  const p = asObject(params, 'params');
  const taskId = requiredString(p, 'taskId', 'params');
  const nested = field(p, 'config') ?? field(p, 'pushNotificationConfig');
  const c = nested === undefined || nested === null ? p : asObject(nested, 'params.config');
  return { taskId, config: pushConfigOf(c, nested === undefined || nested === null ? 'params' : 'params.config', '1.0') };
}

/** v0.3 `tasks/pushNotificationConfig/set` params. */
export function parseV03SetPush(params: unknown): { taskId: string; config: PushConfigInput } {
  const p = asObject(params, 'params');
  return { taskId: requiredString(p, 'taskId', 'params'), config: pushConfigOf(asObject(field(p, 'pushNotificationConfig'), 'params.pushNotificationConfig'), 'params.pushNotificationConfig', '0.3') };
}

/** v1.0 Get/Delete params `{taskId, id}`; List `{taskId}`. */
export function parseV1PushRef(params: unknown, needId: boolean): { taskId: string; id?: string } {
  const p = asObject(params, 'params');
  return { taskId: requiredString(p, 'taskId', 'params'), id: needId ? requiredString(p, 'id', 'params') : optionalString(p, 'id', 'params') };
}

/** v0.3 get/list/delete params `{id, pushNotificationConfigId?}` (`id` is the task's). */
export function parseV03PushRef(params: unknown, needConfigId: boolean): { taskId: string; id?: string } {
  const p = asObject(params, 'params');
  const taskId = requiredString(p, 'id', 'params');
  return { taskId, id: needConfigId ? requiredString(p, 'pushNotificationConfigId', 'params') : optionalString(p, 'pushNotificationConfigId', 'params') };
}
