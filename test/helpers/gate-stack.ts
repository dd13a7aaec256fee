/**
 * The pure gate stack (gates 1–11) run on raw bytes, as `checkMailbox` runs it, against a small
 * in-memory model of the task store; shared by the corpus test and the property tests.
 */
import type { AgentConfig } from '../../src/config/config.js';
import { tokensEqual } from '../../src/core/token.js';
import type { ProviderProfile } from '../../src/uplink/border.js';
import type { DnsResolver } from '../../src/uplink/dkim.js';
import { authenticate, identify, judgeReply, messageFacts, parseReply, type Identified } from '../../src/uplink/gates.js';
import type { ParsedReply } from '../../src/uplink/reply-format.js';
import type { Verdict } from '../../src/uplink/verdicts.js';
import type { CorpusManifest, CorpusMessage, CorpusTask } from './corpus.js';

/** The task store model: tasks by id, plus the raw digests the ledger holds. */
export interface StoreModel {
  tasks: Map<string, CorpusTask>;
  seenDigests: Set<string>;
  /** The judging time and `mailbox.date_skew_s` (ms): with each task's dispatch, the Date window. */
  now: number;
  skewMs: number;
}

export function storeModel(m: CorpusManifest, liveOverride: CorpusMessage['task'] = {}): StoreModel {
  const tasks = new Map<string, CorpusTask>();
  for (const t of m.tasks) {
    const copy = { ...t, appliedMessageIds: [...t.appliedMessageIds] };
    tasks.set(t.id, t.id === m.liveTaskId ? { ...copy, ...liveOverride } : copy);
  }
  return { tasks, seenDigests: new Set(), now: Date.parse(m.judgedAt), skewMs: m.dateSkewMs };
}

export interface StackContext {
  agents: readonly AgentConfig[];
  profile: ProviderProfile;
  resolver: DnsResolver;
  /** Local DKIM verification (issue 3: on by default). */
  verifyDkim?: boolean;
}

export interface StackOutcome {
  verdict: Verdict;
  reason: string;
  identified?: Identified;
  reply?: ParsedReply;
}

/**
 * The pure gate stack on one message, as `checkMailbox` runs it: `messageFacts` → `identify`
 * (gates 1–2) → `authenticate` (3–7) → `parseReply` → `judgeReply` (8–11) with `TaskFacts` read
 * from the store model. Records the digest and, for an applied or late reply, the state change
 * the bridge would commit (`src/core/apply-reply.ts`), so sequences can be replayed.
 */
export async function runStack(raw: Buffer, ctx: StackContext, store: StoreModel): Promise<StackOutcome> {
  const facts = messageFacts(raw);
  const identified = identify(facts, ctx.agents, (sha) => store.seenDigests.has(sha));
  store.seenDigests.add(facts.rawSha256);
  if (!('taskId' in identified)) return { verdict: identified.verdict, reason: identified.reason };
  const refusal = await authenticate(raw, identified, { profile: ctx.profile, verifyDkim: ctx.verifyDkim ?? true, resolver: ctx.resolver });
  if (refusal) return { verdict: refusal.verdict, reason: refusal.reason, identified };
  const reply = await parseReply(raw);
  const task = store.tasks.get(identified.taskId);
  const exists = task !== undefined && task.agent === identified.agent.name;
  const judgement = judgeReply(identified, reply, {
    exists,
    state: exists ? task.state : undefined,
    failedBy: exists ? task.failedBy : null,
    messageIdApplied: exists && identified.messageId !== null && task.appliedMessageIds.includes(identified.messageId),
    tokenMatches: (presented) => tokensEqual(presented, exists ? task.token : null),
    // As src/core/apply-reply.ts passes it: the current turn's dispatch, now, mailbox.date_skew_s.
    ...(exists ? { dateWindow: { dispatchedAt: Date.parse(task.dispatchedAt), now: store.now, skewMs: store.skewMs } } : {}),
  });
  if (exists && (judgement.verdict === 'late:recorded' || 'status' in judgement)) {
    if (identified.messageId !== null) task.appliedMessageIds.push(identified.messageId);
    if (judgement.verdict === 'late:recorded') task.token = null;
    else if ('status' in judgement) {
      if (judgement.status !== 'working') task.token = null;
      if (judgement.status === 'done') task.state = 'COMPLETED';
      if (judgement.status === 'input-required') task.state = 'INPUT_REQUIRED';
      if (judgement.status === 'failed') Object.assign(task, { state: 'FAILED', failedBy: 'agent' });
      if (judgement.status === 'working') task.state = 'WORKING';
    }
  }
  return { verdict: judgement.verdict, reason: judgement.reason, identified, reply };
}
