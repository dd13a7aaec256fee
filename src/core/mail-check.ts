import { plural } from '../plural.js';
import { immediate } from '../store/db.js';
import { hasRawDigest, isSourceRecorded, recordVerdict, type LedgerEntry } from '../store/ledger.js';
import { advanceWatermark, getMailboxState, recordCheck, resetWatermark } from '../store/mailbox-state.js';
import { authenticate, identify, messageFacts, parseReply, type Refusal } from '../uplink/gates.js';
import { MailboxError, type FetchedMessage } from '../uplink/mailbox.js';
import type { Verdict } from '../uplink/verdicts.js';
import { judgeAndApply } from './apply-reply.js';
import type { BridgeContext } from './context.js';

/**
 * How long a message whose authentication failed temporarily (DNS) is judged again on every
 * check before its verdict is recorded for good, in ms (from its arrival in the mailbox).
 */
const TEMPORARY_RETRY_MS = 24 * 3600_000;

/** Raised by processMessage: judge this message again on a later check. */
class DeferredMessage extends Error {
  override readonly name = 'DeferredMessage';
}

/**
 * Logs a recorded verdict with ids only (issue 16: the operator sees refusals at the default
 * level; no header, address or text of the mail goes into the log): an applied reply at info,
 * untagged mail and copies at info, every other refusal at warn.
 */
function logVerdict(ctx: BridgeContext, verdict: Verdict, f: { ledgerId: number | null; task: string | null; agent: string | null; source: string }): void {
  const fields = { verdict, ledgerId: f.ledgerId, task: f.task, agent: f.agent, source: f.source };
  if (verdict.startsWith('applied:') || verdict === 'late:recorded') ctx.log.info(fields, 'reply applied');
  else if (verdict === 'no-task-id' || verdict === 'duplicate') ctx.log.info(fields, 'mail skipped');
  else ctx.log.warn(fields, `mail refused: ${verdict}; see a2a-mailbridge ledger${f.task ? ` --task ${f.task}` : ''}`);
}

/** Raw bytes kept for tagged mail refused before it authenticated, in bytes. */
const REFUSED_RAW_KEEP_BYTES = 64 * 1024;

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
 * Runs one read-only mailbox check (BRIEF §5): fetch what is new after the watermark, pass each
 * message through the gate stack, and commit each verdict — with any promotion and the
 * watermark move — in one transaction per message. A mailbox failure is recorded (for the
 * callers' status text and /health) and returned, never thrown: it must not fail an A2A call.
 */
export async function checkMailbox(ctx: BridgeContext): Promise<CheckSummary> {
  const { db, config, mailbox } = ctx;
  const started = ctx.now();
  const state = getMailboxState(db, mailbox.folder);
  const summary: CheckSummary = { ok: true, fetched: 0, verdicts: {}, more: false, durationMs: 0 };
  try {
    const result = await mailbox.check({
      watermark: { uidValidity: state.uidValidity, lastUid: state.lastUid },
      fromAddresses: config.agents.map((a) => a.address),
      subjectContains: config.agents.map((a) => `[${a.tag}:`),
      maxFetch: config.mailbox.maxFetchPerCheck,
      maxMessageBytes: config.mailbox.maxMessageBytes,
      isRecorded: (source) => isSourceRecorded(db, source),
    });
    if (result.uidValidityChanged) {
      ctx.log.warn({ folder: mailbox.folder, was: state.uidValidity, now: result.uidValidity }, 'UIDVALIDITY changed; rescanning');
      immediate(db, () => resetWatermark(db, mailbox.folder, result.uidValidity));
    }
    summary.fetched = result.messages.length;
    summary.more = result.more;
    for (const msg of result.messages) {
      let verdict: Verdict | null;
      try {
        verdict = await processMessage(ctx, msg, result.uidValidity);
      } catch (err) {
        if (!(err instanceof DeferredMessage)) throw err;
        // Stop here, in order: the watermark stays before this message, so the next check judges
        // it (and everything after it) again.
        summary.more = true;
        throw new MailboxError(`a reply could not be authenticated yet (${err.message}); it will be judged again on the next check`, 'io');
      }
      if (!verdict) continue;
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
    immediate(db, () => recordCheck(db, mailbox.folder, { at: ctx.now(), ok: true, result: line }));
  } catch (err) {
    const message = err instanceof MailboxError ? err.message : `unexpected error: ${(err as Error).message}`;
    summary.ok = false;
    summary.error = message;
    ctx.log.warn({ err: message, folder: mailbox.folder }, 'mailbox check failed');
    immediate(db, () => recordCheck(db, mailbox.folder, { at: ctx.now(), ok: false, result: 'failed', error: message }));
  }
  summary.durationMs = ctx.now() - started;
  ctx.metrics?.checks.inc({ result: summary.ok ? 'ok' : 'error' });
  ctx.metrics?.checkSeconds.observe(summary.durationMs / 1000);
  return summary;
}

/** Passes one message through the gates and commits its verdict. Returns the verdict, or null if already recorded. */
async function processMessage(ctx: BridgeContext, msg: FetchedMessage, uidValidity: string): Promise<Verdict | null> {
  const { db, config, mailbox } = ctx;
  if (isSourceRecorded(db, msg.source)) {
    immediate(db, () => advanceWatermark(db, mailbox.folder, uidValidity, msg.uid));
    return null;
  }
  const facts = messageFacts(msg.raw, msg.size);
  // Raw bytes are evidence: kept whole for authenticated mail, and only the first 64 KiB (the
  // header block and the start of the body) for tagged mail refused before authentication
  // passed — anyone can send that, and it must not fill the disk.
  const entry = (taskId: string | null, agent: string | null, keepRaw: boolean, authenticated = false): Omit<LedgerEntry, 'verdict' | 'reason'> => ({
    source: msg.source,
    seenAt: ctx.now(),
    messageId: facts.messageId,
    fromHeader: facts.from,
    subject: facts.subject,
    dateHeader: facts.date,
    size: msg.size,
    rawSha256: facts.rawSha256,
    raw: !keepRaw ? null : authenticated ? msg.raw : msg.raw.subarray(0, REFUSED_RAW_KEEP_BYTES),
    agent,
    taskId,
    receivedAt: msg.receivedAt,
  });
  const record = (refusal: Refusal, taskId: string | null, agent: string | null): Verdict | null => {
    const id = immediate(db, () => {
      const ledgerId = recordVerdict(db, { ...entry(taskId, agent, taskId !== null), ...refusal });
      advanceWatermark(db, mailbox.folder, uidValidity, msg.uid);
      return ledgerId;
    });
    if (id === null) return null;
    logVerdict(ctx, refusal.verdict, { ledgerId: id, task: taskId, agent, source: msg.source });
    return refusal.verdict;
  };

  // A message the mailbox holds but could not read: recorded with why, and the check goes on.
  if (msg.unreadable) return record({ verdict: `unreadable:${msg.unreadable.reason}`, reason: msg.unreadable.detail }, null, null);

  try {
    const identified = identify(facts, config.agents, (sha) => hasRawDigest(db, sha));
    const tagged = 'taskId' in identified ? identified : identified.tagged;
    const taskId = tagged?.taskId ?? null;
    const agentName = tagged?.agent.name ?? null;
    if (msg.tooLarge && !('verdict' in identified && identified.verdict === 'duplicate')) {
      const why = `${msg.size} bytes, over mailbox.max_message_bytes (${config.mailbox.maxMessageBytes}); refused whole`;
      return record({ verdict: 'too-large', reason: why }, taskId, agentName);
    }
    if ('verdict' in identified) return record({ verdict: identified.verdict, reason: identified.reason }, taskId, agentName);

    const refusal = await authenticate(msg.raw, identified, {
      profile: config.mailbox.profile,
      verifyDkim: config.mailbox.verifyDkim,
      resolver: ctx.dkimResolver,
      receivedAt: msg.receivedAt,
    });
    if (refusal?.temporary) {
      const since = msg.receivedAt ?? ctx.now();
      if (ctx.now() - since < TEMPORARY_RETRY_MS) throw new DeferredMessage(refusal.reason);
      return record({ ...refusal, reason: `${refusal.reason}; still failing ${Math.round(TEMPORARY_RETRY_MS / 3600_000)} h after arrival` }, identified.taskId, identified.agent.name);
    }
    if (refusal) return record(refusal, identified.taskId, identified.agent.name);

    const reply = await parseReply(msg.raw);
    const judged = immediate(db, () => {
      let out: { verdict: Verdict; ledgerId: number } | null;
      if (hasRawDigest(db, facts.rawSha256)) {
        // Recorded by a concurrent check of another process while this one authenticated.
        const id = recordVerdict(db, { ...entry(identified.taskId, identified.agent.name, true, true), verdict: 'duplicate', reason: 'gate 1: the same raw bytes are already in the ledger' });
        out = id === null ? null : { verdict: 'duplicate', ledgerId: id };
      } else {
        const { judgement, ledgerId } = judgeAndApply(db, identified, reply, entry(identified.taskId, identified.agent.name, true, true), ctx.now(), config.mailbox.dateSkewMs);
        out = ledgerId === null ? null : { verdict: judgement.verdict, ledgerId };
      }
      advanceWatermark(db, mailbox.folder, uidValidity, msg.uid);
      return out;
    });
    if (!judged) return null;
    logVerdict(ctx, judged.verdict, { ledgerId: judged.ledgerId, task: identified.taskId, agent: identified.agent.name, source: msg.source });
    return judged.verdict;
  } catch (err) {
    if (err instanceof DeferredMessage) throw err;
    // The parsers never throw on hostile bytes; if something else does, the message is still recorded.
    ctx.log.error({ err: (err as Error).message, source: msg.source }, 'message could not be processed');
    return record({ verdict: 'unreadable', reason: `processing failed: ${(err as Error).message}` }, null, null);
  }
}
