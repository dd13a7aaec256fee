import type { AgentConfig } from '../config/config.js';
import { commandLine } from '../config/config-path.js';
import { plural } from '../plural.js';
import type { AttemptRow } from '../store/attempts.js';
import type { RefusedReplies } from '../store/ledger.js';
import { REFUSED_COUNT_CAP } from '../store/store.js';
import type { MailboxState } from '../store/mailbox-state.js';
import type { TaskRow } from '../store/task-rows.js';
import type { TurnStatus } from '../store/turns.js';
import { humanDuration, iso } from './time.js';

/** What the status text of a task is built from. All times in ms since the epoch. */
export interface StatusFacts {
  task: TaskRow;
  agent: AgentConfig;
  turn: TurnStatus | undefined;
  lastAttempt: AttemptRow | undefined;
  mailbox: MailboxState;
  /**
   * The agent's latest `status: working` note, shown in the part after this text: when it came, and
   * how much of it that part shows (characters).
   */
  progressNote: { at: number; shownChars: number; totalChars: number } | null;
  /** INPUT_REQUIRED: the agent's question is in the part after this text. */
  question?: boolean;
  /**
   * REJECTED by the agent's reply (`status: rejected`): whether its reason (the answer) is in the
   * part after this text, or it wrote none.
   */
  declined?: 'with-reason' | 'without-reason';
  /** FAILED by the agent: the artifact holding its report. */
  reportArtifact?: string;
  /** A late reply kept after a deadline failure, if any: when it came and its artifact. */
  lateReplyAt: number | null;
  lateReplyArtifact?: string;
  /** A poll word to suggest (the first non-empty one configured), so a caller's check is never taken for new work. */
  pollWord?: string;
  /**
   * Since when mail tagged for this task waits for its agent's DKIM key, whose lookup failed
   * temporarily (src/core/deferrals.ts); absent when none does.
   */
  deferredSince?: number;
  /** Mail tagged with this task that the gates refused during the current turn, if any. */
  refused?: RefusedReplies;
  /** `mailbox.check_interval_s` in ms: a poll inside it answers from the store without a check. */
  checkIntervalMs?: number;
  /** `mailbox.watch`: replies are applied as they land, whatever the callers do. */
  watch?: boolean;
  /** The bridge's config file, for the operator's command the text names (its `--config`: src/config/config-path.ts). */
  configFile: string;
  now: number;
}

/**
 * What the caller is told about replies the gates refused: the count, the verdict (a name from
 * the bridge's verdict table) and when, and the command the operator runs. "The bridge's gates",
 * not "authentication gates": a genuine reply refused for a limit (`unparsed:parts`,
 * `too-large-header`) is refused by them too (README, "Security model"). Nothing of the mail
 * itself — no subject, Message-ID or address — since anyone can send mail that names a task.
 */
function refusedLine(r: RefusedReplies, taskId: string, stillWaiting: boolean, configFile: string): string {
  const what = r.count === 1 ? 'A reply for this task was' : `${plural(r.count, 'reply', 'replies')}${r.count >= REFUSED_COUNT_CAP ? ' or more' : ''} for this task were`;
  const last = r.count === 1 ? `verdict ${r.lastVerdict}, seen ${iso(r.lastSeenAt)}` : `the last: verdict ${r.lastVerdict}, seen ${iso(r.lastSeenAt)}`;
  const waits = stillWaiting ? ' and the task still waits for the agent' : '';
  return `${what} refused by the bridge's gates (${last}); ${r.count === 1 ? 'it was' : 'they were'} not applied${waits}. The bridge's operator can see why with: ${commandLine(configFile, `ledger --task ${taskId}`)} (run on the bridge's machine).`;
}

/**
 * What the caller is told about a reply deferred at gate 7 (docs/architecture.md, "The gates"):
 * the bridge's words only; the reason names the signature's selector, which the agent chose
 * (docs/agent-text.md), so it goes to the log, not here.
 */
function deferredLine(since: number): string {
  return `A reply for this task could not be authenticated yet (gate 7: local DKIM verification hit a temperror: the agent's DKIM key lookup failed, first at ${iso(since)}); it will be judged again on a later check, for up to 24 hours after it arrived.`;
}

/**
 * Where the mailbox stands, and when a poll is worth making: with `watch`, replies apply as they
 * land; without it, a call inside `check_interval_s` of the last check answers from the store.
 */
function mailboxLine(m: MailboxState, now: number, intervalMs: number | undefined, watch: boolean): string {
  if (m.lastError && m.errorSince !== null) {
    const ok = m.lastSuccessAt !== null ? ` (last successful check ${iso(m.lastSuccessAt)})` : '';
    return `The mailbox is unreachable since ${iso(m.errorSince)}: ${m.lastError}${ok}; replies will be read once it is back.`;
  }
  if (m.lastCheckAt === null) return watch ? 'The mailbox has not been checked yet; it is watched.' : 'The mailbox has not been checked yet; the next call checks it.';
  const last = `Mailbox last checked ${iso(m.lastCheckAt)} (${humanDuration(now - m.lastCheckAt)} ago: ${m.lastResult ?? 'ok'}).`;
  if (watch) return `${last} The mailbox is watched: a reply is applied as it lands.`;
  if (intervalMs === undefined) return last;
  const due = m.lastCheckAt + intervalMs;
  return due > now
    ? `${last} The next check is due at ${iso(due)} (in ${humanDuration(due - now)}); a call before then answers from what is already known.`
    : `${last} The next call checks it again.`;
}

/**
 * A context id the caller chose, named in the bridge's sentence only when it is a plain id: up to
 * 128 letters, digits and `. _ : @ -` (the ids the bridge and the A2A SDKs make: UUIDs). Any other
 * (line breaks, control or bidi characters, spaces, words that could read as the bridge's) is
 * referred to, not quoted: the bridge's words and text it did not write never share a string
 * (docs/agent-text.md, rule 2). The caller has the id in the task's `contextId` either way.
 */
const PLAIN_ID = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;
export function contextIdWords(contextId: string, otherwise = "this task's context_id (its contextId field)"): string {
  return PLAIN_ID.test(contextId) ? `context_id ${contextId}` : otherwise;
}

/**
 * The bridge's own text in a task's `status.message` (docs/architecture.md, "What the caller reads").
 * Hermes shows the first text artifact, else the status message, so for every non-completed state
 * it must say plainly where the job is and what to do next. Agent text never enters it: a progress
 * note or a question travels in its own fenced part after this text (src/core/task-view.ts), and
 * this text says so (docs/agent-text.md). Returns null when an artifact carries the answer and no
 * note is due.
 */
export function statusText(f: StatusFacts): string | null {
  const { task, agent, turn, now } = f;
  const poll = f.pollWord ? ` (send "${f.pollWord}")` : '';
  const callAgain = `Call again with ${contextIdWords(task.contextId)} to check${poll}.`;
  const deadline =
    task.deadlineAt !== null ? `Deadline ${iso(task.deadlineAt)} (in ${humanDuration(task.deadlineAt - now)}).` : '';
  switch (task.state) {
    case 'SUBMITTED': {
      const a = f.lastAttempt;
      const inFlight = a !== undefined && a.outcome === null;
      const tried = a
        ? inFlight
          ? `The webhook to ${agent.name} is being delivered (attempt ${a.attempt}, started ${iso(a.startedAt)}; it times out at ${iso(a.startedAt + agent.webhook.timeoutMs)}).`
          : `The webhook to ${agent.name} has not been accepted yet (attempt ${a.attempt}: ${a.error ?? a.outcome}).`
        : `The job is stored; the webhook to ${agent.name} has not been sent yet.`;
      // While an attempt is in flight, next_attempt_at holds its lease (the timeout plus a margin:
      // when a crashed attempt is sent again), not a schedule: the next attempt's time is known only
      // once this one has failed (src/core/dispatch.ts).
      const next = turn?.nextAttemptAt && !inFlight ? ` Next attempt at ${iso(turn.nextAttemptAt)}.` : '';
      const refused = f.refused ? refusedLine(f.refused, task.id, true, f.configFile) : '';
      return [`${tried}${next}`, refused, deadline, callAgain].filter(Boolean).join(' ');
    }
    case 'WORKING': {
      const since = turn?.acceptedAt ?? task.updatedAt;
      const lines = [
        `The job is with the cloud agent ${agent.name} since ${iso(since)} (${humanDuration(now - since)}); the webhook was accepted and its reply will come by email.`,
        mailboxLine(f.mailbox, now, f.checkIntervalMs, f.watch === true),
        f.deferredSince !== undefined ? deferredLine(f.deferredSince) : '',
        f.refused ? refusedLine(f.refused, task.id, true, f.configFile) : '',
        deadline,
        callAgain,
      ];
      const n = f.progressNote;
      if (n) {
        const cut = n.shownChars < n.totalChars ? ` It shows the first ${n.shownChars} of ${n.totalChars} characters; the whole note is in the task history.` : '';
        lines.push(`The cloud agent's latest progress note (received ${iso(n.at)}) is in the next part, as the agent wrote it.${cut}`);
      }
      return lines.filter(Boolean).join(' ');
    }
    case 'INPUT_REQUIRED':
      return f.question
        ? `The cloud agent ${agent.name} asks for input: its question is in the next part, as the agent wrote it. Answer on ${contextIdWords(task.contextId)} by sending your answer as a new message.`
        : `The cloud agent ${agent.name} needs more input. Answer on ${contextIdWords(task.contextId)}.`;
    case 'COMPLETED':
      return null;
    case 'FAILED': {
      const late =
        f.lateReplyAt !== null
          ? ` A late reply from ${agent.name} arrived ${iso(f.lateReplyAt)}, after the deadline; it is in the artifact ${f.lateReplyArtifact ?? 'late-reply'} and was not applied.`
          : '';
      const refused = f.refused ? ` ${refusedLine(f.refused, task.id, false, f.configFile)}` : '';
      // A failure the agent reported is said in the bridge's words only: the stored cause of a task
      // applied before causes named no Message-ID could still quote one.
      if (task.failedBy === 'agent') {
        const where = f.reportArtifact ? ` Its report is in the artifact ${f.reportArtifact}, as the agent wrote it.` : '';
        return `Failed: the cloud agent ${agent.name} reported that it could not do the job.${where}${late}${refused}`;
      }
      return `Failed: ${task.stateReason ?? 'unknown cause'}.${late}${refused}`;
    }
    case 'CANCELED':
      return `Canceled: ${task.stateReason ?? 'canceled'}.`;
    case 'REJECTED':
      // Said in the bridge's words only; the agent's reason travels fenced in the next part.
      if (f.declined === 'with-reason') return `Rejected: the cloud agent ${agent.name} declined the task; its reason is in the next part, as the agent wrote it.`;
      if (f.declined === 'without-reason') return `Rejected: the cloud agent ${agent.name} declined the task and gave no reason.`;
      return `Rejected: ${task.stateReason ?? 'rejected'}.`;
  }
}
