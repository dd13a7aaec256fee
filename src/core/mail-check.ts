import type { Logger } from 'pino';
import type { Store, StoreTx } from '../store/store.js';
import type { DnsResolver } from '../uplink/dkim.js';
import { messageFacts } from '../uplink/gates.js';
import { MailboxError, type FetchedMessage } from '../uplink/mailbox.js';
import type { Verdict } from '../uplink/verdicts.js';
import { recordDecision } from './apply-reply.js';
import type { BridgeContext } from './context.js';
import { judgeMessage, judgeRulesOf, type Decision, type JudgeRules, type JudgeStore } from './judge.js';

/** What one mailbox check did. */
export interface CheckSummary {
  ok: boolean;
  fetched: number;
  /** Count per verdict recorded by this check. */
  verdicts: Partial<Record<Verdict, number>>;
  /** More matching messages wait beyond this check's fetch cap. */
  more: boolean;
  error?: string;
  durationMs: number;
}

/**
 * Runs one read-only mailbox check (docs/architecture.md, "The data path"): fetch what is new
 * after the watermark, and hand each message to {@link intake}, in order. A mailbox failure is
 * recorded (for the callers' status text and /health) and returned, never thrown: it must not
 * fail an A2A call.
 */
export async function checkMailbox(ctx: BridgeContext): Promise<CheckSummary> {
  const { store, config, mailbox } = ctx;
  const started = ctx.now();
  const state = store.mailbox.state(mailbox.folder);
  const summary: CheckSummary = { ok: true, fetched: 0, verdicts: {}, more: false, durationMs: 0 };
  const intakeCtx: IntakeContext = { store, rules: judgeRulesOf(config), resolver: ctx.dkimResolver, now: ctx.now, log: ctx.log, folder: mailbox.folder };
  try {
    const result = await mailbox.check({
      watermark: { uidValidity: state.uidValidity, lastUid: state.lastUid },
      fromAddresses: config.agents.map((a) => a.address),
      subjectContains: config.agents.map((a) => `[${a.tag}:`),
      maxFetch: config.mailbox.maxFetchPerCheck,
      maxMessageBytes: config.mailbox.maxMessageBytes,
      isRecorded: (source) => store.ledger.isSourceRecorded(source),
    });
    if (result.uidValidityChanged) {
      ctx.log.warn({ folder: mailbox.folder, was: state.uidValidity, now: result.uidValidity }, 'UIDVALIDITY changed; rescanning');
      store.tx((tx) => tx.mailbox.reset(mailbox.folder, result.uidValidity));
    }
    summary.fetched = result.messages.length;
    summary.more = result.more;
    for (const msg of result.messages) {
      const outcome = await intake(intakeCtx, msg, result.uidValidity);
      if (outcome.kind === 'deferred') {
        // Stop here, in order: the watermark stays before this message, so the next check judges
        // it (and everything after it) again.
        summary.more = true;
        throw new MailboxError(`a reply could not be authenticated yet (${outcome.reason}); it will be judged again on the next check`, 'io');
      }
      if (outcome.kind !== 'recorded') continue;
      const { verdict } = outcome;
      summary.verdicts[verdict] = (summary.verdicts[verdict] ?? 0) + 1;
      ctx.metrics?.verdicts.inc({ verdict });
      if ((verdict.startsWith('applied:') || verdict === 'late:recorded') && msg.receivedAt !== null) {
        ctx.metrics?.promotionSeconds.observe(Math.max(0, ctx.now() - msg.receivedAt) / 1000);
      }
    }
    const applied = Object.entries(summary.verdicts)
      .filter(([v]) => v.startsWith('applied:') || v === 'late:recorded')
      .reduce((n, [, c]) => n + (c ?? 0), 0);
    const line = `ok, ${summary.fetched} new message(s), ${applied} applied${result.more ? ', more waiting' : ''}`;
    store.tx((tx) => tx.mailbox.recordCheck(mailbox.folder, { at: ctx.now(), ok: true, result: line }));
  } catch (err) {
    const message = err instanceof MailboxError ? err.message : `unexpected error: ${(err as Error).message}`;
    summary.ok = false;
    summary.error = message;
    ctx.log.warn({ err: message, folder: mailbox.folder }, 'mailbox check failed');
    store.tx((tx) => tx.mailbox.recordCheck(mailbox.folder, { at: ctx.now(), ok: false, result: 'failed', error: message }));
  }
  summary.durationMs = ctx.now() - started;
  ctx.metrics?.checks.inc({ result: summary.ok ? 'ok' : 'error' });
  ctx.metrics?.checkSeconds.observe(summary.durationMs / 1000);
  return summary;
}

/** What {@link intake} needs: the store, the gates' configuration, DNS, the clock, the log, the folder's watermark key. */
export interface IntakeContext {
  store: Store;
  rules: JudgeRules;
  resolver: DnsResolver;
  now: () => number;
  log: Logger;
  folder: string;
}

/**
 * What became of one message:
 * - `recorded`: judged, and its decision committed (ledger row, any promotion, the watermark);
 * - `seen`: this copy (source) was recorded before; only the watermark moved;
 * - `deferred`: its DKIM key could not be looked up yet; nothing was written.
 */
export type Intake =
  | { kind: 'recorded'; verdict: Verdict; reason: string; ledgerId: number; decision: Exclude<Decision, { kind: 'defer' }> }
  | { kind: 'seen' }
  | { kind: 'deferred'; reason: string };

/**
 * One fetched message through the judge (src/core/judge.ts) and into the store: the judge's
 * deciding step runs inside one `BEGIN IMMEDIATE` transaction that also records the decision
 * (src/core/apply-reply.ts) and moves the watermark past the message. A message the judge fails
 * on (a defect of ours) is still recorded, as `unreadable`, so it is never retried silently.
 */
export async function intake(c: IntakeContext, msg: FetchedMessage, uidValidity: string): Promise<Intake> {
  const { store } = c;
  if (store.ledger.isSourceRecorded(msg.source)) {
    store.tx((tx) => tx.mailbox.advance(c.folder, uidValidity, msg.uid));
    return { kind: 'seen' };
  }
  // Read outside and inside the deciding transaction alike: `store` reads what it holds now.
  const reads: JudgeStore = {
    seenDigest: (sha) => store.ledger.hasRawDigest(sha),
    task: (id) => {
      const task = store.tasks.get(id);
      return task && { task, turn: store.turns.get(task.id, task.turn) };
    },
    messageIdApplied: (taskId, messageId) => store.ledger.isMessageIdApplied(taskId, messageId),
  };
  /** Records the decision and moves the watermark past the message, in the open transaction. */
  const commit = (tx: StoreTx, d: Exclude<Decision, { kind: 'defer' }>): Intake => {
    const ledgerId = recordDecision(tx, d, { source: msg.source, raw: msg.raw, receivedAt: msg.receivedAt, at: c.now() });
    tx.mailbox.advance(c.folder, uidValidity, msg.uid);
    if (d.kind !== 'refuse' || d.evidence === 'whole') c.log.info({ task: d.kind === 'refuse' ? d.tag?.taskId : d.on.task.id, verdict: d.verdict, ledgerId }, 'reply judged');
    return ledgerId === null ? { kind: 'seen' } : { kind: 'recorded', verdict: d.verdict, reason: d.reason, ledgerId, decision: d };
  };
  try {
    return await judgeMessage<Intake>(msg, {
      rules: c.rules,
      resolver: c.resolver,
      now: c.now,
      store: reads,
      settle: (decide) =>
        store.tx((tx): Intake => {
          const d = decide();
          return d.kind === 'defer' ? { kind: 'deferred', reason: d.reason } : commit(tx, d);
        }),
    });
  } catch (err) {
    // The parsers never throw on hostile bytes; if something else does, the message is still recorded.
    c.log.error({ err: (err as Error).message, source: msg.source }, 'message could not be processed');
    const reason = `processing failed: ${(err as Error).message}`;
    return store.tx((tx) => commit(tx, { kind: 'refuse', verdict: 'unreadable', reason, message: messageFacts(msg.raw, msg.size), tag: null, evidence: 'none' }));
  }
}
