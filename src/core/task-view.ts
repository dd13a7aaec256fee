import type { AgentConfig } from '../config/config.js';
import type { ArtifactRow } from '../store/artifacts.js';
import type { MessageViewRow } from '../store/messages.js';
import type { TaskRow } from '../store/task-rows.js';
import type { TaskState } from '../store/task-state.js';
import type { BridgeContext } from './context.js';
import { statusText } from './status-text.js';
import { capText } from './untrusted-text.js';

/** Longest progress note shown inline in a WORKING task's status message, in characters. */
const PROGRESS_NOTE_MAX_CHARS = 4000;

export { TASK_STATES, type TaskState } from '../store/task-state.js';

/** A message of a task's history: the caller's asks and the agent's labelled replies. */
export interface MessageView {
  messageId: string;
  contextId: string;
  taskId: string;
  role: 'user' | 'agent';
  text: string;
}

/** A text artifact built from an authenticated reply. */
export interface ArtifactView {
  artifactId: string;
  name: string;
  text: string;
  /** A reply that came after the task failed: shown, not applied. */
  late: boolean;
}

/** A task as callers see it, independent of the wire dialect (src/a2a/wire.ts renders it). Times in ms since the epoch. */
export interface TaskView {
  id: string;
  contextId: string;
  /** The agent's name. */
  agent: string;
  state: TaskState;
  /** The status timestamp: when the state was last set. */
  statusAt: number;
  turn: number;
  createdAt: number;
  /** The current turn's deadline; null while no turn awaits the agent. */
  deadlineAt: number | null;
  /** `status.message` text, or null when the artifact carries the answer. */
  statusText: string | null;
  artifacts: ArtifactView[];
  /** Oldest first, bounded by the requested history length. */
  history: MessageView[];
}

function messageView(m: MessageViewRow): MessageView {
  return { messageId: m.messageId, contextId: m.contextId, taskId: m.taskId, role: m.role, text: m.text };
}

function artifactView(a: ArtifactRow): ArtifactView {
  return { artifactId: a.artifactId, name: a.name, text: a.text, late: a.name === 'late-reply' };
}

/**
 * Builds the view of a task from the store.
 * @param historyLength newest messages to include; undefined means all, 0 means none
 */
export function viewTask(ctx: BridgeContext, agent: AgentConfig, task: TaskRow, historyLength?: number): TaskView {
  const { store } = ctx;
  const turn = store.turns.status(task.id, task.turn);
  // Only a SUBMITTED task's status text names its last webhook attempt.
  const lastAttempt = turn && task.state === 'SUBMITTED' ? store.attempts.last(turn.dispatchId) : undefined;
  const artifacts = store.artifacts.of(task.id);
  const late = artifacts.find((a) => a.name === 'late-reply');
  // Refused replies matter while the task waits for the agent, and when it failed waiting (deadline).
  const waiting = task.state === 'SUBMITTED' || task.state === 'WORKING' || (task.state === 'FAILED' && task.failedBy === 'deadline');
  const refused = turn && waiting ? store.ledger.refusedRepliesOf(task.id, turn.createdAt) : undefined;
  const progress =
    task.state === 'WORKING' && turn?.replyStatus === 'working' && turn.replyText !== null
      ? `${agent.untrustedLabel}\n${capText(turn.replyText, PROGRESS_NOTE_MAX_CHARS, 'the task history')}`
      : null;
  return {
    id: task.id,
    contextId: task.contextId,
    agent: task.agent,
    state: task.state,
    statusAt: task.updatedAt,
    turn: task.turn,
    createdAt: task.createdAt,
    deadlineAt: task.deadlineAt,
    statusText: statusText({
      task,
      agent,
      turn,
      lastAttempt,
      mailbox: store.mailbox.state(ctx.mailbox.folder),
      progressNote: progress,
      lateReplyAt: late ? late.createdAt : null,
      pollWord: ctx.config.server.pollWords.find((w) => w !== ''),
      ...(refused ? { refused } : {}),
      checkIntervalMs: ctx.config.mailbox.checkIntervalMs,
      watch: ctx.config.mailbox.watch,
      now: ctx.now(),
    }),
    artifacts: artifacts.map(artifactView),
    history: historyLength === 0 ? [] : store.messages.historyView(task.id, historyLength).map(messageView),
  };
}
