import type { AgentConfig } from '../config/config.js';
import { artifactsOf, type ArtifactRow } from '../store/artifacts.js';
import { lastAttemptOf } from '../store/attempts.js';
import { refusedRepliesOf } from '../store/ledger.js';
import { getMailboxState } from '../store/mailbox-state.js';
import { historyOf, type MessageRow } from '../store/messages.js';
import type { TaskRow } from '../store/tasks.js';
import { getTurn } from '../store/turns.js';
import type { BridgeContext } from './context.js';
import { statusText } from './status-text.js';
import { capText } from './untrusted-text.js';

/** Longest progress note shown inline in a WORKING task's status message, in characters. */
const PROGRESS_NOTE_MAX_CHARS = 4000;

/** A task as callers see it, independent of the wire dialect (src/a2a/wire.ts renders it). */
export interface TaskView {
  task: TaskRow;
  agent: AgentConfig;
  /** `status.message` text, or null when the artifact carries the answer. */
  statusText: string | null;
  artifacts: ArtifactRow[];
  /** Oldest first, bounded by the requested history length. */
  history: MessageRow[];
}

/**
 * Builds the view of a task from the store.
 * @param historyLength newest messages to include; undefined means all, 0 means none
 */
export function viewTask(ctx: BridgeContext, agent: AgentConfig, task: TaskRow, historyLength?: number): TaskView {
  const turn = getTurn(ctx.db, task.id, task.turn);
  // Only a SUBMITTED task's status text names its last webhook attempt.
  const lastAttempt = turn && task.state === 'SUBMITTED' ? lastAttemptOf(ctx.db, turn.dispatchId) : undefined;
  const artifacts = artifactsOf(ctx.db, task.id);
  const late = artifacts.find((a) => a.name === 'late-reply');
  // Refused replies matter while the task waits for the agent, and when it failed waiting (deadline).
  const waiting = task.state === 'SUBMITTED' || task.state === 'WORKING' || (task.state === 'FAILED' && task.failedBy === 'deadline');
  const refused = turn && waiting ? refusedRepliesOf(ctx.db, task.id, turn.createdAt) : undefined;
  const progress =
    task.state === 'WORKING' && turn?.replyStatus === 'working' && turn.replyText !== null
      ? `${agent.untrustedLabel}\n${capText(turn.replyText, PROGRESS_NOTE_MAX_CHARS, 'the task history')}`
      : null;
  return {
    task,
    agent,
    statusText: statusText({
      task,
      agent,
      turn,
      lastAttempt,
      mailbox: getMailboxState(ctx.db, ctx.mailbox.folder),
      progressNote: progress,
      lateReplyAt: late ? late.createdAt : null,
      pollWord: ctx.config.server.pollWords.find((w) => w !== ''),
      ...(refused ? { refused } : {}),
      checkIntervalMs: ctx.config.mailbox.checkIntervalMs,
      watch: ctx.config.mailbox.watch,
      now: ctx.now(),
    }),
    artifacts,
    history: historyLength === 0 ? [] : historyOf(ctx.db, task.id, historyLength),
  };
}
