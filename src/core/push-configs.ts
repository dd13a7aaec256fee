import type { AgentConfig } from '../config/config.js';
import type { PushConfigRow } from '../store/push.js';
import type { BridgeContext } from './context.js';
import { BridgeError } from './errors.js';
import { checkPushConfig, storePushConfig, type PushConfigInput } from './push.js';

/**
 * The four push configuration operations (A2A v1.0 §3.1.7–3.1.10; v0.3
 * `tasks/pushNotificationConfig/set|get|list|delete`). Each names a task of the caller's agent;
 * an unknown task, or another agent's, is `task-not-found`, as is an unknown configuration
 * (§3.1.8: "TaskNotFoundError: The push notification configuration does not exist").
 */

function ownTask(ctx: BridgeContext, agent: AgentConfig, taskId: string): void {
  const task = ctx.store.tasks.get(taskId);
  if (!task || task.agent !== agent.name) throw new BridgeError('task-not-found', `Task ${taskId} not found`);
}

/** @throws BridgeError task-not-found, invalid-request (a URL the bridge may not POST to), limit-reached */
export function createPushConfig(ctx: BridgeContext, agent: AgentConfig, taskId: string, c: PushConfigInput): PushConfigRow {
  checkPushConfig(ctx, c);
  return ctx.store.tx((tx) => {
    const task = tx.tasks.get(taskId);
    if (!task || task.agent !== agent.name) throw new BridgeError('task-not-found', `Task ${taskId} not found`);
    return storePushConfig(tx, taskId, c, ctx.now());
  });
}

/** @throws BridgeError task-not-found (the task, or the configuration) */
export function getPushConfig(ctx: BridgeContext, agent: AgentConfig, taskId: string, id: string | undefined): PushConfigRow {
  ownTask(ctx, agent, taskId);
  // v0.3 `get` may leave the id out: the task's first configuration.
  const row = id === undefined ? ctx.store.push.configs(taskId)[0] : ctx.store.push.config(taskId, id);
  if (!row) throw new BridgeError('task-not-found', `Task ${taskId} has no push notification configuration${id === undefined ? '' : ` ${id}`}`);
  return row;
}

/** @throws BridgeError task-not-found */
export function listPushConfigs(ctx: BridgeContext, agent: AgentConfig, taskId: string): PushConfigRow[] {
  ownTask(ctx, agent, taskId);
  return ctx.store.push.configs(taskId);
}

/** Deletes a configuration; deleting one that is gone changes nothing (§3.1.10: idempotent). @throws BridgeError task-not-found */
export function deletePushConfig(ctx: BridgeContext, agent: AgentConfig, taskId: string, id: string): void {
  ownTask(ctx, agent, taskId);
  ctx.store.tx((tx) => tx.push.deleteConfig(taskId, id, ctx.now()));
}
