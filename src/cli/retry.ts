import { attemptResultText } from './attempt-text.js';
import { buildBridge } from '../app.js';
import { loadConfig } from '../config/config.js';
import { claimHeld } from '../store/store.js';
import { commandLine } from '../config/config-path.js';
import { attemptDispatch } from '../core/dispatch.js';
import { BridgeError } from '../core/errors.js';
import { retryDispatch } from '../core/retry.js';
import { createLogger } from '../log.js';
import { CliFailure, UsageError } from './errors.js';
import { retryRefusal } from './retry-refusal.js';
import { requireStoreFile } from './open-store.js';

/**
 * `a2a-mailbridge retry <task>`: re-dispatches a task whose webhook was never accepted —
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
  // A store `serve` has not created yet holds no task to retry: refused before one is created.
  requireStoreFile(config.store.path, { configFile });
  const built = buildBridge(config, { log: createLogger('silent'), storeMustExist: true });
  const { ctx } = built.bridge;
  const db = ctx.store;
  try {
    const ids = db.tasks.idsWithPrefix(idOrPrefix.toLowerCase(), 2);
    if (ids.length === 0) throw new CliFailure(`no task ${idOrPrefix}; see \`${commandLine(configFile, 'tasks --state failed')}\``);
    if (ids.length > 1) throw new UsageError(`${idOrPrefix} is the start of several task ids; give more characters`);
    const task = db.tasks.get(ids[0]!)!;
    const agent = config.agents.find((a) => a.name === task.agent);
    if (!agent) throw new CliFailure(`task ${task.id} belongs to agent ${task.agent}, which is no longer in the config`);
    const turn = db.turns.get(task.id, task.turn);
    const bridgeRunning = claimHeld(config.store.path).held;
    const refusal = retryRefusal({ task, turn, attempts: turn ? db.attempts.of(turn.dispatchId) : [], agent, watch: config.mailbox.watch, bridgeRunning, now: Date.now(), configFile });
    if (refusal !== null) throw new CliFailure(refusal);
    let dispatchId: string;
    try {
      dispatchId = retryDispatch(ctx, agent, task.id).dispatchId;
    } catch (err) {
      if (err instanceof BridgeError) throw new CliFailure(err.message);
      throw err;
    }
    const r = await attemptDispatch(ctx, dispatchId);
    const after = db.tasks.get(task.id)!;
    // null: nothing was due when this process looked (a running bridge took the attempt first).
    const first = r ? `its first attempt ${attemptResultText(r)}` : 'no attempt was made from here (a running bridge took it first)';
    process.stdout.write(`task ${task.id} re-dispatched with webhook-id ${dispatchId}; ${first}; the task is ${after.state}\n`);
    if (after.state === 'SUBMITTED') {
      process.stdout.write(bridgeRunning ? 'the running bridge makes the next attempt on its next step\n' : `no bridge runs on this store now: the next attempt is made once one runs (${commandLine(configFile, 'serve')})\n`);
    }
    return after.state === 'FAILED' ? 1 : 0;
  } finally {
    await built.close();
  }
}
