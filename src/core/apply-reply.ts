import type { StoreTx } from '../store/store.js';
import { failpoint } from './failpoints.js';
import { REFUSED_RAW_KEEP_BYTES, UNREADABLE_RAW_KEEP_BYTES, type Decision } from './judge.js';
import { replyMessageId } from './reply-message-id.js';
import { newFenceNonce } from './untrusted-text.js';

/** Where a judged message was read, and when (src/uplink/mailbox.ts `FetchedMessage`). */
export interface Provenance {
  /** The ledger's unique key of this copy (`imap:<folder>:<uidvalidity>:<uid>`, `maildir:…`). */
  source: string;
  raw: Buffer;
  receivedAt: number | null;
  /** When it was judged, ms since the epoch. */
  at: number;
  /**
   * Large values written before the decision (src/store/large-values.ts): the whole raw message,
   * the answer. A decision that keeps the whole message refers to them instead of writing the bytes.
   */
  staged?: { raw?: number; answer?: number };
}

/**
 * Characters of each header value (Message-ID, From, Subject, Date) the ledger row of mail refused
 * before it authenticated keeps: RFC 5322 §2.1.1's line length. Anyone can send such mail, and a
 * value stored whole is stored again in the index of a task's rows (the Message-ID): 3,000
 * forgeries with 15 KB Message-IDs, 43 MiB of mail, made a 98.5 MiB store, 50 MiB of it that index
 * (attack review 8). The rows gates 1 and 8a read (an authenticated signature, an applied reply)
 * keep theirs whole; the raw bytes a refused row keeps (its first 64 KiB) hold the value.
 */
export const KEPT_FIELD_CHARS = 998;

/** `v` cut at {@link KEPT_FIELD_CHARS}, never inside a surrogate pair. */
function keptField(v: string | null): string | null {
  if (v === null || v.length <= KEPT_FIELD_CHARS) return v;
  const c = v.charCodeAt(KEPT_FIELD_CHARS - 1);
  return v.slice(0, c >= 0xd800 && c <= 0xdbff ? KEPT_FIELD_CHARS - 1 : KEPT_FIELD_CHARS);
}

/**
 * The writes of a decision (src/core/judge.ts), inside the caller's transaction: the ledger row
 * with the raw bytes its evidence rule keeps, and for an applied or late reply its reply row (the
 * answer and the fence nonce) with its attachments, its history message, the state change and the
 * end of any pending webhook retries — all or nothing, so a crash can neither lose a verdict nor
 * apply a reply twice. What the caller reads is built from these rows (src/core/task-view.ts).
 *
 * @returns the ledger id, or null when this source was recorded already (a rescan; nothing written)
 * @throws IllegalTransitionError when the decision asks for a move the task state machine forbids (a defect)
 */
export function recordDecision(tx: StoreTx, d: Exclude<Decision, { kind: 'defer' }>, p: Provenance): number | null {
  const tag = d.kind === 'refuse' ? d.tag : d.on.tag;
  // Mail refused before it authenticated keeps its header values cut (the raw bytes kept hold them whole).
  const field = d.signature === null ? keptField : (v: string | null): string | null => v;
  const rawValue = d.evidence === 'whole' ? (p.staged?.raw ?? null) : null;
  const raw = d.evidence === 'whole' ? (rawValue === null ? p.raw : null) : d.evidence === 'head' ? p.raw.subarray(0, REFUSED_RAW_KEEP_BYTES) : d.evidence === 'routing' ? p.raw.subarray(0, UNREADABLE_RAW_KEEP_BYTES) : null;
  const ledgerId = tx.ledger.record({
    source: p.source,
    seenAt: p.at,
    messageId: field(d.message.messageId),
    fromHeader: field(d.message.from),
    subject: field(d.message.subject),
    dateHeader: field(d.message.date),
    size: d.message.size,
    rawSha256: d.message.rawSha256,
    raw,
    rawValue,
    agent: tag?.agent.name ?? null,
    taskId: tag?.taskId ?? null,
    verdict: d.verdict,
    reason: d.reason,
    receivedAt: p.receivedAt,
    signature: d.signature,
  });
  if (ledgerId === null || d.kind === 'refuse') return ledgerId;
  failpoint('while-applying-reply');

  const { at } = p;
  const { task, turn } = d.on;
  const agent = d.on.tag.agent;
  const reply = d.reply;
  const answerValue = p.staged?.answer ?? null;
  /** The turn's copy of the answer: none when the reply row refers to it as a large value. */
  const turnText = answerValue === null ? reply.answer : null;
  // The reply's content is stored once (src/store/replies.ts) with the nonce of its fence; every view
  // cleans and fences it (docs/agent-text.md). Nothing of the mail goes into bridge text: causes
  // name the ledger row, never the agent-chosen Message-ID.
  tx.replies.insert({
    ledgerId,
    taskId: task.id,
    turn: turn.turn,
    agent: agent.name,
    kind: d.kind === 'late' ? 'late' : d.status,
    nonce: newFenceNonce(),
    text: answerValue === null ? reply.answer : '',
    textValue: answerValue,
    omittedLines: reply.omittedLines,
    createdAt: at,
  });
  reply.attachments.forEach((a, i) =>
    tx.replies.insertAttachment({
      ledgerId,
      seq: i + 1,
      taskId: task.id,
      kind: a.kind,
      filename: a.filename,
      mediaType: a.mediaType,
      size: a.size,
      bytes: a.kind === 'file' ? Buffer.from(a.bytes.buffer, a.bytes.byteOffset, a.bytes.byteLength) : null,
      data: a.kind === 'data' ? a.json : null,
      reason: a.kind === 'data' ? null : a.reason,
    }),
  );
  tx.messages.insert({
    agent: agent.name,
    messageId: replyMessageId(ledgerId),
    taskId: task.id,
    contextId: task.contextId,
    role: 'agent',
    kind: 'reply',
    turn: turn.turn,
    text: '',
    ledgerId,
    contentSha256: d.message.rawSha256,
    createdAt: at,
  });
  // The agent evidently has the turn: a reply ends any pending retries of its webhook.
  if (turn.dispatchState === 'pending') tx.dispatch.move(turn.dispatchId, 'accepted', { nextAttemptAt: null, acceptedAt: at });
  const via = `reply (ledger #${ledgerId})`;

  if (d.kind === 'late') {
    tx.turns.recordReply(task.id, turn.turn, { status: reply.status === 'working' ? 'working' : 'done', text: turnText, ledgerId, at, revokeToken: true });
    tx.tasks.note(task, at, `late reply kept: ${via}`);
    return ledgerId;
  }

  const status = d.status;
  tx.turns.recordReply(task.id, turn.turn, { status, text: turnText, ledgerId, at, revokeToken: status !== 'working' });
  switch (status) {
    case 'done':
      tx.tasks.transition(task, 'COMPLETED', { at, cause: `completed by ${via}`, deadlineAt: null });
      break;
    case 'failed':
      tx.tasks.transition(task, 'FAILED', { at, cause: `the agent reported failure in ${via}`, failedBy: 'agent', deadlineAt: null });
      break;
    case 'rejected':
      // The agent declines the task (A2A v1.0 §4.1.3 TaskState, TASK_STATE_REJECTED): terminal, the
      // token revoked above; its answer, if any, is the reason (shown fenced: src/core/task-view.ts).
      tx.tasks.transition(task, 'REJECTED', { at, cause: `the agent declined the task in ${via}`, deadlineAt: null });
      break;
    case 'input-required':
      tx.tasks.transition(task, 'INPUT_REQUIRED', { at, cause: `the agent asked for input in ${via}`, deadlineAt: null });
      break;
    case 'working':
      if (task.state === 'SUBMITTED') tx.tasks.transition(task, 'WORKING', { at, cause: `progress note in ${via}` });
      else tx.tasks.note(task, at, `progress note in ${via}`);
      break;
    default:
      // Every word gate 11 accepts has its move above: a new word fails the typecheck here.
      return status satisfies never;
  }
  return ledgerId;
}
