import type { AgentConfig } from '../config/config.js';
import { commandLine } from '../config/config-path.js';
import type { StoreTx } from '../store/store.js';
import { BridgeError } from './errors.js';
import { iso } from './time.js';

/** `iso` rounded up to the whole second, so a retry at the time shown is never early. */
function isoUp(ms: number): string {
  return iso(Math.ceil(ms / 1000) * 1000);
}

/** The window of agents.webhook.max_per_minute, in ms. */
export const DISPATCH_WINDOW_MS = 60_000;

/**
 * The per-agent caps, checked inside the transaction that would store the new task or turn (so
 * concurrent calls cannot both pass): `agents.max_open_tasks` for a new task and
 * `agents.webhook.max_per_minute` for every new dispatch (a new task, or an answer to
 * INPUT_REQUIRED). Nothing is stored when a cap is reached.
 *
 * @param newTask true when the call would create a task (an answer adds a turn to an open one)
 * @param now the clock, ms since the epoch
 * @param configFile the config in use, for the operator's commands the open-tasks message names
 *   (`tasks`, `cancel`; src/config/config-path.ts commandLine)
 * @throws BridgeError `limit-reached` naming the config key, its value and when to retry
 *   (`retryAfterSeconds`; for open tasks only when one of them has a deadline)
 */
export function enforceAgentCaps(tx: StoreTx, agent: AgentConfig, now: number, newTask: boolean, configFile: string): void {
  if (newTask) {
    const open = tx.limits.openTasksOf(agent.name);
    if (open.count >= agent.maxOpenTasks) {
      const limit = `agents.max_open_tasks = ${agent.maxOpenTasks}`;
      const at = open.earliestDeadlineAt;
      const wait = at === null ? undefined : Math.max(1, Math.ceil((at - now) / 1000));
      const when =
        at === null
          ? 'retry when the caller has answered or canceled one of them'
          : `retry when one finishes: the earliest deadline is ${iso(at)}, in ${wait} s`;
      throw new BridgeError(
        'limit-reached',
        `${agent.name} already has ${open.count} open tasks, the limit (${limit}); no new task was created. Cancel tasks you no longer need (CancelTask; on the bridge's machine ${commandLine(configFile, `tasks --agent ${agent.name} --state open`)} lists them and ${commandLine(configFile, 'cancel <id>')} cancels one), or ${when}.`,
        { metadata: { limit: 'agents.max_open_tasks', value: String(agent.maxOpenTasks), ...(at === null ? {} : { retryAt: iso(at) }) }, ...(wait === undefined ? {} : { retryAfterSeconds: wait }) },
      );
    }
  }
  const since = now - DISPATCH_WINDOW_MS;
  const recent = tx.limits.dispatchesSince(agent.name, since);
  if (recent.count >= agent.webhook.maxPerMinute) {
    const freeAt = (recent.oldestAt ?? now) + DISPATCH_WINDOW_MS + 1;
    const wait = Math.max(1, Math.ceil((freeAt - now) / 1000));
    const limit = `agents.webhook.max_per_minute = ${agent.webhook.maxPerMinute}`;
    throw new BridgeError(
      'limit-reached',
      `${agent.name} was sent ${recent.count} jobs in the last 60 s, the limit (${limit}); nothing was stored or sent. Retry in ${wait} s (after ${isoUp(freeAt)}).`,
      { metadata: { limit: 'agents.webhook.max_per_minute', value: String(agent.webhook.maxPerMinute), retryAt: isoUp(freeAt) }, retryAfterSeconds: wait },
    );
  }
}
