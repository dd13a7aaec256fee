import { createPushConfig, deletePushConfig, getPushConfig, listPushConfigs } from '../core/push-configs.js';
import type { Handler } from './call.js';
import { parseV03PushRef, parseV03SetPush, parseV1CreatePush, parseV1PushRef } from './push-params.js';
import { v03PushConfig, v1PushConfig } from './push-wire.js';

/**
 * The push notification configuration methods (docs/push.md): A2A v1.0 §9.4.7
 * (CreateTaskPushNotificationConfig, GetTaskPushNotificationConfig,
 * ListTaskPushNotificationConfigs, DeleteTaskPushNotificationConfig) and v0.3 §7.5–7.6
 * (`tasks/pushNotificationConfig/set|get|list|delete`).
 */

export const V1_PUSH_METHODS: Readonly<Record<string, Handler>> = {
  CreateTaskPushNotificationConfig: (bridge, params, c) => {
    const p = parseV1CreatePush(params);
    return Promise.resolve(v1PushConfig(createPushConfig(bridge.ctx, c.agent, p.taskId, p.config)));
  },
  GetTaskPushNotificationConfig: (bridge, params, c) => {
    const p = parseV1PushRef(params, true);
    return Promise.resolve(v1PushConfig(getPushConfig(bridge.ctx, c.agent, p.taskId, p.id)));
  },
  // All of a task's configurations fit one page (at most 10 per task), so nextPageToken is empty.
  ListTaskPushNotificationConfigs: (bridge, params, c) => {
    const p = parseV1PushRef(params, false);
    return Promise.resolve({ configs: listPushConfigs(bridge.ctx, c.agent, p.taskId).map(v1PushConfig), nextPageToken: '' });
  },
  // google.protobuf.Empty in ProtoJSON.
  DeleteTaskPushNotificationConfig: (bridge, params, c) => {
    const p = parseV1PushRef(params, true);
    deletePushConfig(bridge.ctx, c.agent, p.taskId, p.id!);
    return Promise.resolve({});
  },
};

export const V03_PUSH_METHODS: Readonly<Record<string, Handler>> = {
  'tasks/pushNotificationConfig/set': (bridge, params, c) => {
    const p = parseV03SetPush(params);
    return Promise.resolve(v03PushConfig(createPushConfig(bridge.ctx, c.agent, p.taskId, p.config)));
  },
  'tasks/pushNotificationConfig/get': (bridge, params, c) => {
    const p = parseV03PushRef(params, false);
    return Promise.resolve(v03PushConfig(getPushConfig(bridge.ctx, c.agent, p.taskId, p.id)));
  },
  'tasks/pushNotificationConfig/list': (bridge, params, c) => {
    const p = parseV03PushRef(params, false);
    return Promise.resolve(listPushConfigs(bridge.ctx, c.agent, p.taskId).map(v03PushConfig));
  },
  'tasks/pushNotificationConfig/delete': (bridge, params, c) => {
    const p = parseV03PushRef(params, true);
    deletePushConfig(bridge.ctx, c.agent, p.taskId, p.id!);
    return Promise.resolve(null);
  },
};
