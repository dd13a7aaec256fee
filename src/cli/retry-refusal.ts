/**
 * Why `a2a-mailbridge retry` refuses a task, in words that state the rule and what happens next
 * (a SUBMITTED task whose attempt got ECONNREFUSED was told "only a task whose webhook
 * was never accepted can be retried"). The rule: only a task that FAILED by dispatch — its
 * attempts exhausted (`max_attempts`, `max_age_s`) or the webhook refused it (3xx/4xx, 410) — is
 * re-dispatched; any other task is either still being delivered by the bridge on its own, or
 * the agent has had the job.
 */
import { attemptOutcome } from './attempt-text.js';
import type { AgentConfig } from '../config/config.js';
import { commandLine } from '../config/config-path.js';
import { humanDuration, iso } from '../core/time.js';
import { plural } from '../plural.js';
import type { AttemptRow } from '../store/attempts.js';
import type { TaskRow } from '../store/task-rows.js';
import type { TurnRow } from '../store/turns.js';

/** What the refusal is built from: the task, its current turn and that turn's attempts (oldest first). */
export interface RetryFacts {
  task: TaskRow;
  turn: TurnRow | undefined;
  /** Attempts of the turn's current webhook-id, oldest first. */
  attempts: readonly AttemptRow[];
  agent: AgentConfig;
  /** `mailbox.watch`: with it the bridge makes due attempts on a timer, else on the next A2A call. */
  watch: boolean;
  /** Whether a bridge runs on this store now (a `serve` holds its claim: src/store/serve-claim.ts `claimHeld`). */
  bridgeRunning: boolean;
  now: number;
  /** The config file in use, for the command the refusal names (src/config/config-path.ts). */
  configFile: string;
}

const RULE = '`retry` is for a task that FAILED by dispatch (its attempts exhausted, or refused by the webhook)';

function lastAttemptText(a: AttemptRow): string {
  if (a.outcome === null) return `attempt ${a.attempt} is under way since ${iso(a.startedAt)}`;
  return attemptOutcome({ ...a, outcome: a.outcome });
}

/** The SUBMITTED case: the bridge is still delivering the webhook on its own. */
function stillDelivering(f: RetryFacts): string {
  const { task, turn, attempts, agent, now } = f;
  const hook = agent.webhook;
  const last = attempts.at(-1);
  const parts = [`task ${task.id} is SUBMITTED: its webhook has not been accepted yet, and the bridge retries it by itself`];
  if (last) parts.push(lastAttemptText(last));
  else parts.push('no attempt has been made yet');
  if (turn?.nextAttemptAt !== null && turn?.nextAttemptAt !== undefined && last?.outcome !== null) {
    const at = turn.nextAttemptAt;
    const when = at <= now ? `due now (since ${iso(at)})` : `at ${iso(at)} (in ${humanDuration(at - now)})`;
    const by = !f.bridgeRunning
      ? `no bridge runs on this store now, so none makes it: start one (${commandLine(f.configFile, 'serve')}) and it does`
      : f.watch
        ? 'the running bridge makes it'
        : 'the running bridge makes it on the first A2A call after that (mailbox.watch is off)';
    parts.push(`the next automatic attempt (${attempts.length + 1} of max_attempts ${hook.maxAttempts}) is ${when}; ${by}`);
  }
  if (turn) parts.push(`attempts stop after ${plural(hook.maxAttempts, 'attempt')} or at ${iso(turn.createdAt + hook.maxAgeMs)} (max_age_s ${hook.maxAgeMs / 1000}), and the task then FAILS by dispatch`);
  parts.push(`${RULE}; see every attempt with: ${commandLine(f.configFile, `show ${task.id.slice(0, 8)}`)}`);
  return parts.join('; ');
}

/**
 * Why the task cannot be retried, as one message ending in what to do; null when it can (FAILED
 * by dispatch with its current dispatch failed).
 */
export function retryRefusal(f: RetryFacts): string | null {
  const { task, turn } = f;
  switch (task.state) {
    case 'FAILED':
      if (task.failedBy === 'dispatch' && turn?.dispatchState === 'failed') return null;
      return `task ${task.id} FAILED by ${task.failedBy ?? 'the agent'} (${task.stateReason ?? 'no cause recorded'}), after its webhook was accepted: the agent had the job, so it is not sent again; ${RULE}. Send the job again as a new message to start a new task`;
    case 'SUBMITTED':
      return stillDelivering(f);
    case 'WORKING': {
      const accepted = turn?.acceptedAt !== null && turn?.acceptedAt !== undefined ? ` at ${iso(turn.acceptedAt)}` : '';
      return `task ${task.id} is WORKING: its webhook was accepted${accepted} and the agent has the job; its reply comes by email. ${RULE}. To start over, cancel it (${commandLine(f.configFile, `cancel ${task.id.slice(0, 8)}`)}, or the caller's CancelTask) and send the job again`;
    }
    case 'INPUT_REQUIRED':
      return `task ${task.id} is INPUT_REQUIRED: the agent asked the caller a question; answer it on context_id ${task.contextId}. ${RULE}`;
    default:
      return `task ${task.id} is ${task.state} (${task.stateReason ?? 'finished'}): it is finished. ${RULE}; send the job again as a new message to start a new task`;
  }
}
