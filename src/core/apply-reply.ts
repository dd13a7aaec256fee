import { plural } from '../plural.js';
import { insertArtifact } from '../store/artifacts.js';
import type { Db } from '../store/db.js';
import { isMessageIdApplied, recordVerdict, type LedgerEntry } from '../store/ledger.js';
import { insertMessage } from '../store/messages.js';
import { getTask, noteEvent, transition } from '../store/tasks.js';
import { getTurn, recordReply, setDispatchState } from '../store/turns.js';
import { judgeReply, type Identified, type Judgement } from '../uplink/gates.js';
import type { ParsedReply } from '../uplink/reply-format.js';
import { failpoint } from './failpoints.js';
import { tokensEqual } from './token.js';
import { safeText } from './untrusted-text.js';
import { iso } from './time.js';

/**
 * Gates 8–11 and the promotion, inside the caller's transaction (BRIEF §5–6): reads the task,
 * judges the reply, records the ledger row with its raw bytes, and applies the state change —
 * all or nothing, so a crash can neither lose a verdict nor apply a reply twice.
 *
 * @param entry the ledger row minus the verdict and reason
 * @returns the judgement and the ledger id (null when this source was recorded already)
 */
export function judgeAndApply(
  db: Db,
  m: Identified,
  reply: ParsedReply,
  entry: Omit<LedgerEntry, 'verdict' | 'reason'>,
  at: number,
  dateSkewMs: number,
): { judgement: Judgement; ledgerId: number | null } {
  const task = getTask(db, m.taskId);
  const exists = task !== undefined && task.agent === m.agent.name;
  const turn = exists ? getTurn(db, task.id, task.turn) : undefined;
  const judgement = judgeReply(m, reply, {
    exists,
    state: task?.state,
    failedBy: task?.failedBy ?? null,
    messageIdApplied: exists && m.messageId !== null && isMessageIdApplied(db, task.id, m.messageId),
    tokenMatches: (presented) => tokensEqual(presented, turn?.replyToken ?? null),
    ...(turn ? { dateWindow: { dispatchedAt: turn.createdAt, now: at, skewMs: dateSkewMs } } : {}),
  });
  const ledgerId = recordVerdict(db, { ...entry, verdict: judgement.verdict, reason: judgement.reason });
  if (ledgerId === null || !task || !turn) return { judgement, ledgerId };
  failpoint('while-applying-reply');
  if (judgement.verdict !== 'late:recorded' && !('status' in judgement)) return { judgement, ledgerId };

  const label = m.agent.untrustedLabel;
  // Nothing is cut silently: what the reply format left out (quoted text, a signature) is counted.
  const omitted =
    reply.omittedLines > 0
      ? `\n\n(${plural(reply.omittedLines, 'line')} after the answer ${reply.omittedLines === 1 ? 'was' : 'were'} left out as quoted text or a signature; \`a2a-mailbridge ledger --raw ${ledgerId}\` shows the whole mail.)`
      : '';
  const answer = safeText(reply.answer) + omitted;
  const body = `${label}\n${answer}`;
  const agentMessage = (text: string): void =>
    insertMessage(db, {
      agent: m.agent.name,
      messageId: `reply-${ledgerId}`,
      taskId: task.id,
      contextId: task.contextId,
      role: 'agent',
      kind: 'reply',
      turn: turn.turn,
      text,
      contentSha256: entry.rawSha256,
      createdAt: at,
    });
  const artifact = (name: string, text: string): void =>
    insertArtifact(db, { artifactId: `${name}-${ledgerId}`, taskId: task.id, turn: turn.turn, name, text, ledgerId, createdAt: at });
  // The agent evidently has the turn: a reply ends any pending retries of its webhook.
  if (turn.dispatchState === 'pending') setDispatchState(db, turn.dispatchId, { state: 'accepted', nextAttemptAt: null, acceptedAt: at });
  const via = `reply ${m.messageId ?? '(no Message-ID)'} (ledger #${ledgerId})`;

  if (judgement.verdict === 'late:recorded') {
    const note = `(This reply arrived ${iso(at)}, after the task failed: ${task.stateReason ?? 'deadline'}. It was not applied; the task stays FAILED.)`;
    recordReply(db, task.id, turn.turn, { status: reply.status === 'working' ? 'working' : 'done', text: answer, ledgerId, at, revokeToken: true });
    artifact('late-reply', `${label}\n${note}\n${answer}`);
    agentMessage(body);
    noteEvent(db, task, at, `late reply kept: ${via}`);
    return { judgement, ledgerId };
  }

  if (!('status' in judgement)) return { judgement, ledgerId };
  const status = judgement.status;
  recordReply(db, task.id, turn.turn, { status, text: answer, ledgerId, at, revokeToken: status !== 'working' });
  agentMessage(body);
  switch (status) {
    case 'done':
      artifact('reply', body);
      transition(db, task, 'COMPLETED', { at, cause: `completed by ${via}`, deadlineAt: null });
      break;
    case 'failed':
      artifact('reply', body);
      transition(db, task, 'FAILED', { at, cause: `the agent reported failure in ${via}`, failedBy: 'agent', deadlineAt: null });
      break;
    case 'input-required':
      transition(db, task, 'INPUT_REQUIRED', { at, cause: `the agent asked for input in ${via}`, deadlineAt: null });
      break;
    case 'working':
      if (task.state === 'SUBMITTED') transition(db, task, 'WORKING', { at, cause: `progress note in ${via}` });
      else noteEvent(db, task, at, `progress note in ${via}`);
      break;
  }
  return { judgement, ledgerId };
}
