import type { PushConfigRow, PushRenderer } from '../core/push.js';
import type { JsonObject } from './wire.js';
import { v1Task } from './wire.js';
import { v03Task } from './wire-v03.js';

/**
 * Push notifications on the wire (docs/push.md). A configuration is answered without its
 * credentials (v0.3 §7.5: "The server MAY omit or mask any sensitive details like secrets"); the
 * token the caller chose is echoed. A notification is the task as the change left it: in v1.0 a
 * StreamResponse holding the Task (A2A v1.0 §4.3.3), in v0.3 the bare Task (as the a2a-js SDK's
 * v0.3 serializer sends it), history left out.
 */

/** A v1.0 TaskPushNotificationConfig. */
export function v1PushConfig(c: PushConfigRow): JsonObject {
  return {
    id: c.id,
    taskId: c.taskId,
    url: c.url,
    ...(c.token !== null ? { token: c.token } : {}),
    ...(c.authScheme !== null ? { authentication: { scheme: c.authScheme } } : {}),
  };
}

/** A v0.3 TaskPushNotificationConfig. */
export function v03PushConfig(c: PushConfigRow): JsonObject {
  return {
    taskId: c.taskId,
    pushNotificationConfig: {
      id: c.id,
      url: c.url,
      ...(c.token !== null ? { token: c.token } : {}),
      ...(c.authScheme !== null ? { authentication: { schemes: [c.authScheme] } } : {}),
    },
  };
}

/** The body of one notification, in the dialect the configuration was set in. */
export const renderPush: PushRenderer = (task, dialect) => (dialect === '1.0' ? { task: v1Task(task) } : v03Task(task));
