import { randomUUID } from 'node:crypto';
import { BridgeError } from './errors.js';
import type { AgentConfig } from '../config/config.js';
import { encodeEnvelope, replyInstructions, subjectTag, type Envelope } from '../downlink/envelope.js';
import type { StoreTx } from '../store/store.js';
import type { TaskRow } from '../store/task-rows.js';
import { isTerminal } from '../store/task-state.js';
import type { BridgeContext } from './context.js';
import { envelopeThread } from './envelope-thread.js';
import { enforceAgentCaps } from './limits.js';
import { checkPushConfig, storePushConfig, type PushConfigInput } from './push.js';
import { isReplyMessageId } from './reply-message-id.js';
import { mintToken } from './token.js';
import { iso } from './time.js';

/** A caller's message, already validated by the A2A layer. */
export interface SendInput {
  messageId: string;
  contextId?: string;
  taskId?: string;
  /** The text of the message's parts, joined with newlines. */
  text: string;
  /** SHA-256 (hex) over the message content, to tell a replay from a reused `messageId`. */
  contentSha256: string;
  /** Per-call deadline of the turn, in ms from now (message metadata); the agent's default otherwise. */
  deadlineMs?: number;
  /** Who asked, for the audit entry. */
  caller: string;
  /**
   * A push notification configuration given with the message (A2A v1.0 §3.2.2
   * `taskPushNotificationConfig`): stored with the task the message lands on, in the same
   * transaction, so no change of it is missed.
   */
  push?: PushConfigInput;
}

/**
 * What a SendMessage came to (docs/architecture.md, "Context rules"):
 * - `new`: a task was created and its first turn awaits dispatch;
 * - `answer`: the caller answered INPUT_REQUIRED; the next turn awaits dispatch;
 * - `poll`: a follow-up on an open task (or a poll word on a finished one): no dispatch;
 * - `replay`: a `messageId` seen before: the same task, no dispatch;
 * - `no-task`: a poll word on a context that has no task.
 */
export type SendOutcome =
  | { kind: 'new' | 'answer'; task: TaskRow; dispatchId: string }
  | { kind: 'replay'; task: TaskRow }
  /**
   * `ignoredText`: the message held new text the task could not take (it is not forwarded):
   * `open` — the task is with the agent; `unseen-outcome` — it finished and the caller has not
   * been shown the result yet.
   */
  | { kind: 'poll'; task: TaskRow; ignoredText: false | 'open' | 'unseen-outcome' }
  | { kind: 'no-task'; contextId: string };

/**
 * Characters of a poll's text the store keeps, with its size and digest. A poll is not forwarded
 * and nothing reads its text back (a task's history leaves polls out); its row is kept for
 * `messageId` dedupe. Stored whole, 200 polls of 956 KB grew the store 195 MB in 4 s, past every
 * per-agent cap (attack review, 2026-12-02).
 */
export const POLL_TEXT_KEEP = 256;

/**
 * Message rows (asks, polls, replies) a task holds at most before its polls are answered without
 * a row of their own (counted in `tasks.polls_unstored`). Such a poll's `messageId` is not kept:
 * sent again, it is judged afresh (a poll again while the task is open).
 */
export const MAX_MESSAGE_ROWS_WITH_POLLS = 1000;

/** What the store keeps of a poll's text: its first {@link POLL_TEXT_KEEP} characters (never half a surrogate pair), and its size when cut. */
function pollText(text: string): { text: string; textBytes: number | null } {
  if (text.length <= POLL_TEXT_KEEP) return { text, textBytes: null };
  const end = /[\uD800-\uDBFF]/.test(text[POLL_TEXT_KEEP - 1]!) ? POLL_TEXT_KEEP - 1 : POLL_TEXT_KEEP;
  return { text: text.slice(0, end), textBytes: Buffer.byteLength(text) };
}

function isPollWord(ctx: BridgeContext, text: string): boolean {
  return ctx.config.server.pollWords.includes(text.trim().toLowerCase());
}

/** Builds the envelope of a turn and inserts the turn with a fresh token (the previous tokens are revoked). */
function openTurn(ctx: BridgeContext, tx: StoreTx, agent: AgentConfig, task: TaskRow, turn: number, ask: string, deadlineAt: number, now: number): string {
  const { thread, omitted } = envelopeThread(tx, task.id, turn);
  tx.turns.revokeTokens(task.id);
  const token = mintToken();
  const dispatchId = `msg_${randomUUID().replaceAll('-', '')}`;
  const tag = subjectTag(agent.tag, task.id);
  const deadline = iso(deadlineAt);
  const envelope: Envelope = {
    v: 1,
    task_id: task.id,
    turn,
    reply_token: token,
    from: ctx.config.server.name,
    ask,
    thread,
    ...(omitted > 0 ? { thread_omitted: omitted } : {}),
    constraints: replyInstructions({ replyTo: ctx.config.mailbox.address, from: agent.address, subjectTag: tag, token, deadline, maxAttachmentBytes: ctx.config.mailbox.maxAttachmentBytes }),
    deadline,
    reply_to: ctx.config.mailbox.address,
    subject_tag: tag,
  };
  tx.turns.insert({
    taskId: task.id,
    turn,
    ask,
    replyToken: token,
    deadlineAt,
    dispatchId,
    envelope: encodeEnvelope(envelope),
    dispatchState: 'pending',
    nextAttemptAt: now,
    acceptedAt: null,
    replyStatus: null,
    replyText: null,
    replyLedgerId: null,
    repliedAt: null,
    createdAt: now,
  });
  return dispatchId;
}

/**
 * Applies the context rules to one SendMessage, in one `BEGIN IMMEDIATE` transaction, so the
 * task and its turn are committed before any network call and two concurrent calls cannot both
 * create or dispatch. The caller's message is stored under its
 * `messageId`, durably, for dedupe across restarts.
 *
 * @throws BridgeError invalid-request (a reused `messageId` with other content, one of the form
 *   `reply-<n>` the agent's replies take, an empty new task,
 *   a `taskId` of another context), task-not-found (an unknown `taskId`), task-closed (new
 *   work addressed by `taskId` to a terminal task), limit-reached (a per-agent cap: see limits.ts).
 */
export function submit(ctx: BridgeContext, agent: AgentConfig, input: SendInput): SendOutcome {
  if (input.push) checkPushConfig(ctx, input.push);
  return ctx.store.tx((tx): SendOutcome => {
    const outcome = decide(ctx, tx, agent, input);
    if (input.push && outcome.kind !== 'no-task' && outcome.kind !== 'replay') storePushConfig(tx, outcome.task.id, input.push, ctx.now());
    return outcome;
  });
}

/** The context rules of {@link submit}, inside its transaction. */
function decide(ctx: BridgeContext, tx: StoreTx, agent: AgentConfig, input: SendInput): SendOutcome {
  const now = ctx.now();
  // The form of the agent's replies in the history: stored, it would take the id of a reply to come (src/core/reply-message-id.ts).
  if (isReplyMessageId(input.messageId)) {
    throw new BridgeError('invalid-request', `messageId ${input.messageId} has the form the bridge gives the agent's replies in the history (reply-<number>); use another messageId`);
  }
  const seen = tx.messages.byId(agent.name, input.messageId);
  if (seen) {
    if (seen.contentSha256 !== input.contentSha256) {
      throw new BridgeError('invalid-request', `messageId ${input.messageId} was already used for a different message; use a new messageId`);
    }
    const replayed = tx.tasks.get(seen.taskId);
    // `prune` removes a task with its messages; a row left behind must not crash the call.
    if (!replayed) throw new BridgeError('invalid-request', `messageId ${input.messageId} belonged to a task that no longer exists; use a new messageId`);
    return { kind: 'replay', task: replayed };
  }

  let target: TaskRow | undefined;
  if (input.taskId !== undefined) {
    target = tx.tasks.get(input.taskId);
    if (!target || target.agent !== agent.name) throw new BridgeError('task-not-found', `Task ${input.taskId} not found`);
    if (input.contextId !== undefined && input.contextId !== target.contextId) {
      throw new BridgeError('invalid-request', `task ${target.id} belongs to another contextId`);
    }
  } else if (input.contextId !== undefined) {
    target = tx.tasks.latestOfContext(agent.name, input.contextId);
  }
  const contextId = input.contextId ?? target?.contextId ?? randomUUID();
  const poll = isPollWord(ctx, input.text);
  const message = (task: TaskRow, kind: 'ask' | 'poll', turn: number): void => {
    if (kind === 'poll' && tx.messages.countOfTask(task.id) >= MAX_MESSAGE_ROWS_WITH_POLLS) return void tx.messages.countUnstoredPoll(task.id);
    tx.messages.insert({
      agent: agent.name,
      messageId: input.messageId,
      taskId: task.id,
      contextId,
      role: 'user',
      kind,
      turn,
      ...(kind === 'poll' ? pollText(input.text) : { text: input.text }),
      contentSha256: input.contentSha256,
      createdAt: now,
    });
  };

  if (target && (poll || (!isTerminal(target.state) && target.state !== 'INPUT_REQUIRED'))) {
    message(target, 'poll', target.turn);
    return { kind: 'poll', task: target, ignoredText: poll ? false : 'open' };
  }
  // A result the caller has not seen yet (applied by another call's check, or by the watcher)
  // is answered first, whatever the text: a poll phrased as "any update?" must not start new
  // work and hide the answer.
  if (target && isTerminal(target.state) && input.taskId === undefined && (target.outcomeShownAt ?? null) === null) {
    message(target, 'poll', target.turn);
    return { kind: 'poll', task: target, ignoredText: 'unseen-outcome' };
  }
  if (target?.state === 'INPUT_REQUIRED') {
    enforceAgentCaps(tx, agent, now, false, ctx.config.file);
    const turn = target.turn + 1;
    const deadlineAt = now + (input.deadlineMs ?? agent.deadlineMs);
    const dispatchId = openTurn(ctx, tx, agent, target, turn, input.text, deadlineAt, now);
    const task = tx.tasks.transition(target, 'SUBMITTED', { at: now, cause: `the caller answered (turn ${turn})`, turn, deadlineAt });
    message(task, 'ask', turn);
    return { kind: 'answer', task, dispatchId };
  }
  if (target && input.taskId !== undefined) {
    throw new BridgeError(
      'task-closed',
      `Task ${target.id} is ${target.state.toLowerCase()}; it accepts no new work. Send without taskId to start a new task on this context.`,
    );
  }
  if (input.text.trim() === '') throw new BridgeError('invalid-request', 'the message has no text to send to the agent');
  if (poll) {
    if (input.contextId === undefined) throw new BridgeError('invalid-request', `"${input.text.trim()}" asks for a status, but no contextId names the task to check`);
    return { kind: 'no-task', contextId };
  }

  enforceAgentCaps(tx, agent, now, true, ctx.config.file);
  const deadlineAt = now + (input.deadlineMs ?? agent.deadlineMs);
  const task: TaskRow = {
    id: randomUUID(),
    agent: agent.name,
    contextId,
    state: 'SUBMITTED',
    stateReason: 'task stored; dispatch pending',
    failedBy: null,
    turn: 1,
    caller: input.caller,
    createdAt: now,
    updatedAt: now,
    deadlineAt,
  };
  tx.tasks.insert(task);
  const dispatchId = openTurn(ctx, tx, agent, task, 1, input.text, deadlineAt, now);
  message(task, 'ask', 1);
  return { kind: 'new', task, dispatchId };
}
