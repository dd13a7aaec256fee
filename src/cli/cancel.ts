import { buildBridge } from '../app.js';
import { loadConfig, type AgentConfig, type Config } from '../config/config.js';
import { commandLine } from '../config/config-path.js';
import { cancelAndNotify, cancelNoticeId } from '../core/cancel.js';
import { agentByName, type BridgeContext } from '../core/context.js';
import { BridgeError } from '../core/errors.js';
import type { DeliveryResult } from '../downlink/deliver.js';
import { createLogger } from '../log.js';
import { claimHeld } from '../store/store.js';
import { attemptResultText, statusAndDetail } from './attempt-text.js';
import { CliFailure, UsageError } from './errors.js';
import { clean } from './format.js';
import { requireStoreFile } from './open-store.js';
import { MIN_PREFIX, resolveTaskId } from './task-id.js';
import { noAgentText } from './agent-name.js';

/** Options of `a2a-mailbridge cancel`. */
export interface CancelOptions {
  /** Every open task (SUBMITTED, WORKING, INPUT_REQUIRED) of `agent`, instead of ids. */
  allOpen?: boolean;
  /** The agent whose open tasks `--all-open` cancels; required with it. */
  agent?: string;
}

/** The cause `cancel` records: the CANCELED status text callers read is `Canceled: <cause>.`. */
export const OPERATOR_CAUSE = 'canceled by the operator (a2a-mailbridge cancel)';

/**
 * What the cancel notice came to, in words for the operator (notify_cancel: src/core/cancel.ts);
 * `never-received`: none was sent, as the agent never received the job.
 */
export function noticeLine(agent: AgentConfig, taskId: string, r: DeliveryResult | null | Error | 'off' | 'never-received'): string {
  const revoked = 'a reply the agent still sends is recorded and never applied (its token is revoked)';
  if (r === 'never-received') return `no cancel notice: ${agent.name} never received the job (no webhook attempt reached it: each was turned away or could not connect; and no reply came), so it has nothing to stop`;
  if (r === 'off') return `no cancel notice: agents.webhook.notify_cancel is off for ${agent.name}, so the agent is not told; ${revoked}`;
  if (r === null) return `no cancel notice: the task has no turn to base it on; ${revoked}`;
  if (r instanceof Error) return `the cancel notice was not sent: ${r.message}; it is not tried again; ${revoked}`;
  const id = `webhook-id ${cancelNoticeId(taskId)}`;
  if (r.outcome === 'accepted') return `cancel notice sent to ${agent.name}'s webhook (${id}): accepted${statusAndDetail(r.httpStatus, r.error)}`;
  return `cancel notice to ${agent.name}'s webhook (${id}) NOT accepted: it ${attemptResultText(r)}; it is not tried again, so the agent may still be working on the task; ${revoked}`;
}

/**
 * Cancels one task as A2A CancelTask does (src/core/cancel.ts cancelAndNotify: one transaction,
 * tokens revoked, a pending dispatch stopped) and, when the agent's `notify_cancel` is on, sends
 * the cancel notice from this process and waits for its answer.
 * @returns the lines that say what happened
 * @throws CliFailure for an unknown task, one of an agent no longer in the config, or one in a terminal state
 */
async function cancelOne(ctx: BridgeContext, configFile: string, idOrPrefix: string, done: Set<string>): Promise<string[]> {
  const id = resolveTaskId(ctx.store, idOrPrefix);
  if (id === undefined) {
    const hint = idOrPrefix.trim().length < MIN_PREFIX ? ` (a prefix needs at least ${MIN_PREFIX} characters)` : '';
    throw new CliFailure(`no task ${idOrPrefix}${hint}; list the open tasks with: ${commandLine(configFile, 'tasks --state open')}`);
  }
  if (done.has(id)) return []; // named twice (by id and by a prefix, say): canceled once
  const before = ctx.store.tasks.get(id)!;
  const agent = agentByName(ctx.config, before.agent);
  if (!agent) throw new CliFailure(`task ${id} belongs to agent ${before.agent}, which is no longer in the config: not canceled`);
  let canceled;
  try {
    canceled = cancelAndNotify(ctx, agent, id, OPERATOR_CAUSE);
  } catch (err) {
    if (err instanceof BridgeError) throw new CliFailure(`${err.message}; nothing changed`);
    throw err;
  }
  done.add(id);
  const notice = !canceled.received ? 'never-received' : canceled.notice === null ? 'off' : await canceled.notice.catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
  return [`task ${id} (${agent.name}) canceled: it was ${before.state}, it is CANCELED`, `  ${noticeLine(agent, id, notice)}`];
}

/**
 * Refuses an `--agent` the config does not name; from the config alone, before the store is opened.
 * @throws CliFailure naming the config's agents
 */
function requireAgent(config: Config, configFile: string, agent: string): void {
  if (!agentByName(config, agent)) throw new CliFailure(noAgentText(agent, config.agents.map((a) => a.name), configFile));
}

/** The ids of `agent`'s open tasks (SUBMITTED, WORKING, INPUT_REQUIRED) now, newest status first. */
function openTaskIds(ctx: BridgeContext, agent: string): string[] {
  const { count } = ctx.store.limits.openTasksOf(agent);
  return count === 0 ? [] : ctx.store.tasks.rows({ agent, states: ['SUBMITTED', 'WORKING', 'INPUT_REQUIRED'], limit: count }).map((t) => t.id);
}

/**
 * `a2a-mailbridge cancel <task>…` (or `--all-open --agent <name>`): cancels each task (its id, or a unique prefix of at least 4
 * characters) as A2A CancelTask does, with the cause {@link OPERATOR_CAUSE}. Safe while `serve`
 * runs: the change is one transaction, and the running bridge's views follow the store's
 * generation, so its GetTask answers CANCELED at once; push notifications the change queued are
 * sent by that bridge (or by the next one to start). The cancel notice (`notify_cancel`) is sent by
 * this command itself, whether a bridge runs or not, and its outcome printed; it is recorded as an
 * attempt (`show <task>`), and never retried (as the bridge's own).
 *
 * Every task is tried: each is reported, a refusal on stderr. `--all-open --agent <name>` takes the
 * agent's open tasks at the start (a task created meanwhile is not canceled).
 *
 * @returns 0 when every task was canceled (or `--all-open` found none); 1 when any was refused
 *   (unknown, finished, of an agent no longer in the config)
 * @throws UsageError with no task, or ids and `--all-open` together, or `--all-open` without
 *   `--agent` (or `--agent` alone); CliFailure for an agent not in the config; ConfigError;
 *   StoreError, for a store that does not exist yet among others (neither is created)
 */
export async function runCancel(configFile: string, idsOrPrefixes: readonly string[], o: CancelOptions = {}): Promise<number> {
  if (o.allOpen && idsOrPrefixes.length > 0) throw new UsageError('give task ids or --all-open --agent <name>, not both');
  if (o.allOpen && o.agent === undefined) throw new UsageError('--all-open needs --agent <name>: whose open tasks to cancel');
  if (!o.allOpen && o.agent !== undefined) throw new UsageError('--agent goes with --all-open; to cancel some of its tasks, give their ids');
  if (!o.allOpen && idsOrPrefixes.length === 0) throw new UsageError('give one or more task ids (or unique prefixes of at least 4 characters), or --all-open --agent <name>');
  const config = loadConfig(configFile);
  // Checked before anything opens the store: a mistyped agent, or a store `serve` has not created
  // yet (so no task to cancel), is refused without creating one.
  if (o.allOpen) requireAgent(config, configFile, o.agent!);
  requireStoreFile(config.store.path, { configFile });
  const built = buildBridge(config, { log: createLogger('silent'), storeMustExist: true });
  const { ctx } = built.bridge;
  let failed = 0;
  const done = new Set<string>();
  try {
    const ids = o.allOpen ? openTaskIds(ctx, o.agent!) : idsOrPrefixes;
    if (o.allOpen && ids.length === 0) process.stdout.write(`${o.agent} has no open task; nothing to cancel\n`);
    for (const given of ids) {
      try {
        const lines = await cancelOne(ctx, configFile, given, done);
        if (lines.length > 0) process.stdout.write(`${lines.join('\n')}\n`);
      } catch (err) {
        if (!(err instanceof CliFailure)) throw err;
        failed++;
        process.stderr.write(`a2a-mailbridge: ${clean(err.message)}\n`);
      }
    }
    if (done.size > 0 && !claimHeld(config.store.path).held) {
      process.stdout.write(`no bridge runs on this store now: callers learn of the cancel at their next call once one runs, and it sends the push notifications then (${commandLine(configFile, 'serve')})\n`);
    }
  } finally {
    await built.close();
  }
  return failed === 0 ? 0 : 1;
}
