import type { AgentConfig } from '../config/config.js';
import type { AttemptRow } from '../store/attempts.js';
import type { MailboxState } from '../store/mailbox-state.js';
import type { TaskRow } from '../store/task-rows.js';
import type { TurnRow } from '../store/turns.js';
import { humanDuration, iso } from './time.js';

/** What the status text of a task is built from. All times in ms since the epoch. */
export interface StatusFacts {
  task: TaskRow;
  agent: AgentConfig;
  turn: TurnRow | undefined;
  lastAttempt: AttemptRow | undefined;
  mailbox: MailboxState;
  /** The agent's latest `status: working` note, already labelled, if any. */
  progressNote: string | null;
  /** A late reply kept after a deadline failure, if any. */
  lateReplyAt: number | null;
  /** A poll word to suggest (the first non-empty one configured), so a caller's check is never taken for new work. */
  pollWord?: string;
  now: number;
}

function mailboxLine(m: MailboxState, now: number): string {
  if (m.lastError && m.errorSince !== null) {
    const ok = m.lastSuccessAt !== null ? ` (last successful check ${iso(m.lastSuccessAt)})` : '';
    return `The mailbox is unreachable since ${iso(m.errorSince)}: ${m.lastError}${ok}; replies will be read once it is back.`;
  }
  if (m.lastCheckAt === null) return 'The mailbox has not been checked yet.';
  return `Mailbox last checked ${iso(m.lastCheckAt)} (${humanDuration(now - m.lastCheckAt)} ago: ${m.lastResult ?? 'ok'}).`;
}

/**
 * The `status.message` text of a task (docs/architecture.md, "What the caller reads"). Hermes shows the first
 * text artifact, else this text, so for every non-completed state it must say plainly where the
 * job is and what to do next. Returns null when an artifact carries the answer and no note is due.
 */
export function statusText(f: StatusFacts): string | null {
  const { task, agent, turn, now } = f;
  const poll = f.pollWord ? ` (send "${f.pollWord}")` : '';
  const callAgain = `Call again with context_id ${task.contextId} to check${poll}.`;
  const deadline =
    task.deadlineAt !== null ? `Deadline ${iso(task.deadlineAt)} (in ${humanDuration(task.deadlineAt - now)}).` : '';
  switch (task.state) {
    case 'SUBMITTED': {
      const a = f.lastAttempt;
      const tried = a
        ? a.outcome === null
          ? `The webhook to ${agent.name} is being delivered (attempt ${a.attempt}, started ${iso(a.startedAt)}).`
          : `The webhook to ${agent.name} has not been accepted yet (attempt ${a.attempt}: ${a.error ?? a.outcome}).`
        : `The job is stored; the webhook to ${agent.name} has not been sent yet.`;
      const next = turn?.nextAttemptAt ? ` Next attempt at ${iso(turn.nextAttemptAt)}.` : '';
      return [`${tried}${next}`, deadline, callAgain].filter(Boolean).join(' ');
    }
    case 'WORKING': {
      const since = turn?.acceptedAt ?? task.updatedAt;
      const lines = [
        `The job is with the cloud agent ${agent.name} since ${iso(since)} (${humanDuration(now - since)}); the webhook was accepted and its reply will come by email.`,
        mailboxLine(f.mailbox, now),
        deadline,
        callAgain,
      ];
      if (f.progressNote) lines.push(`Latest progress note from the agent:\n${f.progressNote}`);
      return lines.filter(Boolean).join(' ');
    }
    case 'INPUT_REQUIRED':
      return turn?.replyText !== null && turn?.replyText !== undefined
        ? `${agent.untrustedLabel}\n${turn.replyText}`
        : `${agent.name} needs more input. Answer on context_id ${task.contextId}.`;
    case 'COMPLETED':
      return null;
    case 'FAILED': {
      const late =
        f.lateReplyAt !== null
          ? ` A late reply from ${agent.name} arrived ${iso(f.lateReplyAt)}, after the deadline; it is attached as an artifact and was not applied.`
          : '';
      return `Failed: ${task.stateReason ?? 'unknown cause'}.${late}`;
    }
    case 'CANCELED':
      return `Canceled: ${task.stateReason ?? 'canceled'}.`;
    case 'REJECTED':
      return `Rejected: ${task.stateReason ?? 'rejected'}.`;
  }
}
