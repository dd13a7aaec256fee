import type { Logger } from 'pino';
import { plural } from '../plural.js';
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
        // The callers' status text shows this error: the bridge's words only. The reason names the
        // signature's selector, which the agent chose (docs/agent-text.md); it goes to the log.
        ctx.log.info({ folder: mailbox.folder, uid: msg.uid, reason: outcome.reason }, 'reply deferred');
        throw new MailboxError('a reply could not be authenticated yet (gate 7: local DKIM verification hit a temperror: the key lookup failed); it will be judged again on the next check', 'io');
      }
      if (outcome.kind !== 'recorded') continue;
      const { verdict } = outcome;
      summary.verdicts[verdict] = (summary.verdicts[verdict] ?? 0) + 1;
      ctx.metrics?.verdicts.inc({ verdict });
      if ((verdict.startsWith('applied:') || verdict === 'late:recorded') && msg.receivedAt !== null) {
        ctx.metrics?.promotionSeconds.observe(Math.max(0, ctx.now() - msg.receivedAt) / 1000);
      }
    }
    let applied = 0;
    let refused = 0;
    for (const [v, c] of Object.entries(summary.verdicts)) {
      if (v.startsWith('applied:') || v === 'late:recorded') applied += c ?? 0;
      else refused += c ?? 0;
    }
    const line = `ok, ${plural(summary.fetched, 'new message')}, ${applied} applied${refused ? `, ${refused} refused` : ''}${result.more ? ', more waiting' : ''}`;
    store.tx((tx) => tx.mailbox.recordCheck(mailbox.folder, { at: ctx.now(), ok: true, result: line }));
  } catch (err) {
    const message = err instanceof MailboxError ? err.message : `unexpected error: ${(err as Error).message}`;
    summary.ok = false;
    summary.error = message;
    ctx.log.warn({ err: message, folder: mailbox.folder }, 'mailbox check failed');
    store.tx((tx) => tx.mailbox.recordCheck(mailbox.folder, { at: ctx.now(), ok: false, result: 'failed', error: message }));
  }
  summary.durationMs = ctx.now() - started;
  ctx.log.debug({ folder: mailbox.folder, ok: summary.ok, fetched: summary.fetched, more: summary.more, ms: summary.durationMs }, 'mailbox check done');
  ctx.metrics?.checks.inc({ result: summary.ok ? 'ok' : 'error' });
  ctx.metrics?.checkSeconds.observe(summary.durationMs / 1000);
  return summary;
}

/**
 * Logs a recorded verdict with ids only (the operator sees refusals at the default level; no
 * header, address or text of the mail goes into the log): an applied reply at info, untagged mail
 * and copies at info, every other refusal at warn.
 */
function logVerdict(log: Logger, verdict: Verdict, f: { ledgerId: number | null; task: string | null; agent: string | null; source: string }): void {
  const fields = { verdict, ledgerId: f.ledgerId, task: f.task, agent: f.agent, source: f.source };
  if (verdict.startsWith('applied:') || verdict === 'late:recorded') log.info(fields, 'reply applied');
  else if (verdict === 'no-task-id' || verdict === 'duplicate') log.info(fields, 'mail skipped');
  else log.warn(fields, `mail refused: ${verdict}; see a2a-mailbridge ledger${f.task ? ` --task ${f.task}` : ''}`);
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
    return ledgerId === null ? { kind: 'seen' } : { kind: 'recorded', verdict: d.verdict, reason: d.reason, ledgerId, decision: d };
  };
  /** After the commit: the verdict in the log. */
  const logged = (out: Intake): Intake => {
    if (out.kind === 'recorded') {
      const tag = out.decision.kind === 'refuse' ? out.decision.tag : out.decision.on.tag;
      logVerdict(c.log, out.verdict, { ledgerId: out.ledgerId, task: tag?.taskId ?? null, agent: tag?.agent.name ?? null, source: msg.source });
    }
    return out;
  };
  try {
    return logged(await judgeMessage<Intake>(msg, {
      rules: c.rules,
      resolver: c.resolver,
      now: c.now,
      store: reads,
      settle: (decide) =>
        store.tx((tx): Intake => {
          const d = decide();
          return d.kind === 'defer' ? { kind: 'deferred', reason: d.reason } : commit(tx, d);
        }),
    }));
  } catch (err) {
    // The parsers never throw on hostile bytes; if something else does, the message is still recorded.
    c.log.error({ err: (err as Error).message, source: msg.source }, 'message could not be processed');
    const reason = `processing failed: ${(err as Error).message}`;
    return logged(store.tx((tx) => commit(tx, { kind: 'refuse', verdict: 'unreadable', reason, message: messageFacts(msg.raw, msg.size), tag: null, evidence: 'none' })));
  }
}
