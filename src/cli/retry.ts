import { A2AError } from '../a2a/errors.js';
import { openMailbox } from '../app.js';
import { loadConfig } from '../config/config.js';
import type { BridgeContext } from '../core/context.js';
import { attemptDispatch } from '../core/dispatch.js';
import { retryDispatch } from '../core/retry.js';
import { webhookDispatcher } from '../downlink/deliver.js';
import { createLogger } from '../log.js';
import { openDb } from '../store/db.js';
import { attemptsOf } from '../store/attempts.js';
import { getTask, taskIdsWithPrefix } from '../store/tasks.js';
import { getTurn } from '../store/turns.js';
import { makeResolver } from '../uplink/dkim.js';
import { CliFailure, UsageError } from './errors.js';
import { retryRefusal } from './retry-refusal.js';

/**
 * `a2a-mailbridge retry <task>` (issue 5): re-dispatches a task whose webhook was never accepted —
 * same turn, ask and thread; a fresh token, deadline and webhook-id — and makes the first attempt
 * now, so the person sees the outcome. A task id or a unique prefix of at least 4 characters.
 *
 * @returns 0 when the webhook accepted it or a later attempt is scheduled; 1 when it was refused
 * @throws UsageError for an ambiguous or short prefix; CliFailure for an unknown task or one that
 *   did not fail by dispatch (the message says why, and for a SUBMITTED task when the bridge's own
 *   next attempt is: see retry-refusal.ts); ConfigError, StoreError
 */
export async function runRetry(configFile: string, idOrPrefix: string): Promise<number> {
  if (idOrPrefix.length < 4) throw new UsageError('give the task id or a prefix of at least 4 characters');
  const config = loadConfig(configFile);
  const db = openDb(config.store.path);
  const dispatcher = webhookDispatcher(Math.max(...config.agents.map((a) => a.webhook.timeoutMs)));
  try {
    const ids = taskIdsWithPrefix(db, idOrPrefix.toLowerCase(), 2);
    if (ids.length === 0) throw new CliFailure(`no task ${idOrPrefix}; see \`a2a-mailbridge tasks --state failed\``);
    if (ids.length > 1) throw new UsageError(`${idOrPrefix} is the start of several task ids; give more characters`);
    const task = getTask(db, ids[0]!)!;
    const agent = config.agents.find((a) => a.name === task.agent);
    if (!agent) throw new CliFailure(`task ${task.id} belongs to agent ${task.agent}, which is no longer in the config`);
    const turn = getTurn(db, task.id, task.turn);
    const refusal = retryRefusal({ task, turn, attempts: turn ? attemptsOf(db, turn.dispatchId) : [], agent, watch: config.mailbox.watch, now: Date.now() });
    if (refusal !== null) throw new CliFailure(refusal);
    const ctx: BridgeContext = {
      config,
      db,
      mailbox: openMailbox(config),
      log: createLogger('silent'),
      now: Date.now,
      random: Math.random,
      dispatcher,
      dkimResolver: makeResolver(config.dnsServers),
    };
    let dispatchId: string;
    try {
      dispatchId = retryDispatch(ctx, agent, task.id).dispatchId;
    } catch (err) {
      if (err instanceof A2AError) throw new CliFailure(err.message);
      throw err;
    }
    const r = await attemptDispatch(ctx, dispatchId);
    const after = getTask(db, task.id)!;
    const outcome = r ? `${r.outcome}${r.httpStatus !== null ? ` (HTTP ${r.httpStatus})` : ''}${r.error ? `: ${r.error}` : ''}` : 'not attempted';
    process.stdout.write(`task ${task.id} re-dispatched with webhook-id ${dispatchId}; first attempt ${outcome}; the task is ${after.state}\n`);
    if (after.state === 'SUBMITTED') process.stdout.write('the running bridge makes the next attempt on its next step\n');
    return after.state === 'FAILED' ? 1 : 0;
  } finally {
    await dispatcher.close();
    db.close();
  }
}
