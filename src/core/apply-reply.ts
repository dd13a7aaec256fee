import type { StoreTx } from '../store/store.js';
import { plural } from '../plural.js';
import { failpoint } from './failpoints.js';
import { REFUSED_RAW_KEEP_BYTES, type Decision } from './judge.js';
import { safeText } from './untrusted-text.js';
import { iso } from './time.js';

/** Where a judged message was read, and when (src/uplink/mailbox.ts `FetchedMessage`). */
export interface Provenance {
  /** The ledger's unique key of this copy (`imap:<folder>:<uidvalidity>:<uid>`, `maildir:…`). */
  source: string;
  raw: Buffer;
  receivedAt: number | null;
  /** When it was judged, ms since the epoch. */
  at: number;
}

/**
 * The writes of a decision (src/core/judge.ts), inside the caller's transaction: the ledger row
 * with the raw bytes its evidence rule keeps, and for an applied or late reply the state change,
 * the agent's message and artifact, and the end of any pending webhook retries — all or nothing,
 * so a crash can neither lose a verdict nor apply a reply twice.
 *
 * @returns the ledger id, or null when this source was recorded already (a rescan; nothing written)
 * @throws IllegalTransitionError when the decision asks for a move the task state machine forbids (a defect)
 */
export function recordDecision(tx: StoreTx, d: Exclude<Decision, { kind: 'defer' }>, p: Provenance): number | null {
  const tag = d.kind === 'refuse' ? d.tag : d.on.tag;
  const raw = d.evidence === 'whole' ? p.raw : d.evidence === 'head' ? p.raw.subarray(0, REFUSED_RAW_KEEP_BYTES) : null;
  const ledgerId = tx.ledger.record({
    source: p.source,
    seenAt: p.at,
    messageId: d.message.messageId,
    fromHeader: d.message.from,
    subject: d.message.subject,
    dateHeader: d.message.date,
    size: d.message.size,
    rawSha256: d.message.rawSha256,
    raw,
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
  const label = agent.untrustedLabel;
  const reply = d.reply;
  // Nothing is cut silently: what the reply format left out (quoted text, a signature) is counted.
  const omitted =
    reply.omittedLines > 0
      ? `\n\n(${plural(reply.omittedLines, 'line')} after the answer ${reply.omittedLines === 1 ? 'was' : 'were'} left out as quoted text or a signature; \`a2a-mailbridge ledger --raw ${ledgerId}\` shows the whole mail.)`
      : '';
  const answer = safeText(reply.answer) + omitted;
  const body = `${label}\n${answer}`;
  const agentMessage = (text: string): void =>
    tx.messages.insert({
      agent: agent.name,
      messageId: `reply-${ledgerId}`,
      taskId: task.id,
      contextId: task.contextId,
      role: 'agent',
      kind: 'reply',
      turn: turn.turn,
      text,
      contentSha256: d.message.rawSha256,
      createdAt: at,
    });
  const artifact = (name: string, text: string): void =>
    tx.artifacts.insert({ artifactId: `${name}-${ledgerId}`, taskId: task.id, turn: turn.turn, name, text, ledgerId, createdAt: at });
  // The agent evidently has the turn: a reply ends any pending retries of its webhook.
  if (turn.dispatchState === 'pending') tx.dispatch.move(turn.dispatchId, 'accepted', { nextAttemptAt: null, acceptedAt: at });
  const via = `reply ${d.message.messageId ?? '(no Message-ID)'} (ledger #${ledgerId})`;

  if (d.kind === 'late') {
    const note = `(This reply arrived ${iso(at)}, after the task failed: ${task.stateReason ?? 'deadline'}. It was not applied; the task stays FAILED.)`;
    tx.turns.recordReply(task.id, turn.turn, { status: reply.status === 'working' ? 'working' : 'done', text: answer, ledgerId, at, revokeToken: true });
    artifact('late-reply', `${label}\n${note}\n${answer}`);
    agentMessage(body);
    tx.tasks.note(task, at, `late reply kept: ${via}`);
    return ledgerId;
  }

  const status = d.status;
  tx.turns.recordReply(task.id, turn.turn, { status, text: answer, ledgerId, at, revokeToken: status !== 'working' });
  agentMessage(body);
  switch (status) {
    case 'done':
      artifact('reply', body);
      tx.tasks.transition(task, 'COMPLETED', { at, cause: `completed by ${via}`, deadlineAt: null });
      break;
    case 'failed':
      artifact('reply', body);
      tx.tasks.transition(task, 'FAILED', { at, cause: `the agent reported failure in ${via}`, failedBy: 'agent', deadlineAt: null });
      break;
    case 'input-required':
      tx.tasks.transition(task, 'INPUT_REQUIRED', { at, cause: `the agent asked for input in ${via}`, deadlineAt: null });
      break;
    case 'working':
      if (task.state === 'SUBMITTED') tx.tasks.transition(task, 'WORKING', { at, cause: `progress note in ${via}` });
      else tx.tasks.note(task, at, `progress note in ${via}`);
      break;
  }
  return ledgerId;
}
