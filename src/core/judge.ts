import type { AgentConfig, Config } from '../config/config.js';
import type { TaskRow } from '../store/task-rows.js';
import type { TurnRow } from '../store/turns.js';
import type { ProviderProfile } from '../uplink/border.js';
import type { DkimSignatureInfo, DnsResolver } from '../uplink/dkim.js';
import {
  alignedSignatures,
  dateInWindow,
  dkimVerifies,
  dmarcHolds,
  DUPLICATE_BYTES,
  fromIsAgent,
  headerBlockReadable,
  headerShape,
  isRefusal,
  messageFacts,
  prefixFacts,
  replayedMessageId,
  replayedSignature,
  replayedSignatureUnreadable,
  replyStatus,
  routingFacts,
  signatureKey,
  taskOpen,
  STAMP_PREFIX_BYTES,
  taskTag,
  tokenHolds,
  trustedResults,
  unknownTask,
  UNPINNED_WITHOUT_VERIFICATION,
  type MessageFacts,
  type Refusal,
  type ReplyStatusWord,
  type TaskTag,
} from '../uplink/gates.js';
import type { UnreadableReason } from '../uplink/mailbox.js';
import { sha256Sliced } from '../uplink/digest.js';
import { onTheStamp, stampRefusal } from '../uplink/stamp.js';
import { parseReply, ParserUnavailableError, type ParsedReply } from '../uplink/reply-format.js';
import { tokensEqual } from './token.js';

/**
 * How long a message whose DKIM key lookup failed temporarily (DNS) is judged again on later
 * checks (with a backoff: src/core/deferrals.ts) before it is refused for good, in ms from its
 * arrival in the mailbox.
 */
export const TEMPORARY_RETRY_MS = 24 * 3600_000;

/** Raw bytes kept for tagged mail refused before it authenticated (`evidence: 'head'`), in bytes. */
export const REFUSED_RAW_KEEP_BYTES = 64 * 1024;

/**
 * Raw bytes kept for tagged mail whose header block cannot be read as one (`evidence: 'routing'`):
 * the bytes its tag was read from (uplink/message-facts.ts `routingFacts`), no more — a replay of
 * genuine mail padded past 256 KiB of header would otherwise keep 64 KiB a copy.
 */
export const UNREADABLE_RAW_KEEP_BYTES = STAMP_PREFIX_BYTES;

/** One message as the mailbox handed it over (src/uplink/mailbox.ts `FetchedMessage`). */
export interface IncomingMessage {
  /** The exact bytes (for `tooLarge`, the header block only). */
  raw: Buffer;
  /** Size of the whole message in bytes. */
  size: number;
  /** Larger than `mailbox.max_message_bytes`: refused whole, never cut. */
  tooLarge: boolean;
  /** When the mailbox received it, ms since the epoch; null if unknown. */
  receivedAt: number | null;
  /** The mailbox holds it but could not read it (`raw` is then what was read, often nothing). */
  unreadable?: { reason: UnreadableReason; detail: string };
}

/** The configuration the gates read (`mailbox.*` and the agents). */
export interface JudgeRules {
  agents: readonly AgentConfig[];
  profile: ProviderProfile;
  /** Gate 7 also verifies the aligned signature locally (`mailbox.verify_dkim`). */
  verifyDkim: boolean;
  /** Gate 8's Date window: how far a Date may lie before the dispatch or after now, in ms. */
  dateSkewMs: number;
  /** `mailbox.max_message_bytes`, for the too-large reason. */
  maxMessageBytes: number;
  /** `mailbox.max_attachment_bytes`: larger attachments of an applied reply are refused (src/uplink/attachments.ts). */
  maxAttachmentBytes?: number;
}

export function judgeRulesOf(config: Config): JudgeRules {
  const m = config.mailbox;
  return {
    agents: config.agents,
    profile: m.profile,
    verifyDkim: m.verifyDkim,
    dateSkewMs: m.dateSkewMs,
    maxMessageBytes: m.maxMessageBytes,
    maxAttachmentBytes: m.maxAttachmentBytes,
  };
}

/** The store reads the judge makes (src/core/mail-check.ts answers them from SQLite). */
export interface JudgeStore {
  /** Gate 1: a ledger row holds exactly these bytes (SHA-256, hex). */
  seenDigest(rawSha256: string): boolean;
  /**
   * Gate 1, by signature: the id of a ledger row of mail authenticated by one of these DKIM
   * signatures (uplink/gates.ts `signatureKey`) with this Message-ID, or with any when `messageId`
   * is null (uplink/gates.ts `replayedSignatureUnreadable`); undefined when none.
   */
  authenticatedWith(signatures: string[], messageId: string | null): number | undefined;
  /** Gates 8–11: the task and its current turn; undefined when no such task exists. */
  task(taskId: string): { task: TaskRow; turn: TurnRow | undefined } | undefined;
  /** Gate 8a: a reply with this Message-ID was applied (or kept late) for the task. */
  messageIdApplied(taskId: string, messageId: string): boolean;
}

/** What the judge reads besides the message. */
export interface JudgeFacts<R> {
  rules: JudgeRules;
  /** DNS for gate 7's key lookups (mailauth resolver shape). */
  resolver: DnsResolver;
  /** The clock, ms since the epoch. */
  now(): number;
  store: JudgeStore;
  /**
   * Runs the step that makes the decision, and commits it. The judge calls this exactly once,
   * with a synchronous `decide` whose store reads (the duplicate re-check, the task for gates
   * 8–11) must see what the writes of the decision are committed against: the caller opens one
   * store transaction, runs `decide`, writes its decision and commits (src/core/mail-check.ts).
   * A caller that writes nothing may just return `decide()`.
   */
  settle(decide: () => Decision): R;
  /**
   * Called once for an authenticated, parsed reply, right before `settle`: the time to write, in
   * bounded steps, what a decision to keep it would store (src/store/large-values.ts). Optional.
   */
  stage?(reply: ParsedReply): Promise<void>;
  /**
   * Gate 8's task rule is also asked on the header block, before local verification (default
   * true). `doctor`, which judges a ledger row again for gates 3–7, sets false: it wants the
   * signature verified whatever became of the task.
   */
  taskOnHeaders?: boolean;
}

/**
 * How much of the raw message the ledger keeps: all of it for an applied or late reply (the
 * evidence of what changed a task), the first {@link REFUSED_RAW_KEEP_BYTES} for other tagged mail
 * (anyone can send that, and a replay of genuine mail is as large as the genuine one: neither may
 * fill the disk) — the first {@link UNREADABLE_RAW_KEEP_BYTES} (`routing`) when its header block
 * cannot be read as one — nothing for untagged mail.
 */
export type Evidence = 'whole' | 'head' | 'routing' | 'none';

/** The tagged task a decision is about, with what the store held when the decision was made. */
export interface DecidedTask {
  tag: TaskTag;
  task: TaskRow;
  turn: TurnRow;
}

/** The judge's answer for one message. Every kind but `defer` is recorded in the ledger. */
export type Decision =
  | {
      kind: 'refuse';
      verdict: Refusal['verdict'];
      reason: string;
      message: MessageFacts;
      tag: TaskTag | null;
      evidence: Evidence;
      /** The DKIM signature that authenticated the mail (`signatureKey`), when the refusal came after gate 7; else null. */
      signature: string | null;
    }
  /** Look at the message again on a later check; nothing is recorded (the watermark stays before it). */
  | {
      kind: 'defer';
      reason: string;
      message: MessageFacts;
      /** `parser`: the MIME parser could not be loaded; else a DKIM key lookup failed temporarily. */
      cause?: 'parser';
      /** The tagged agent whose key lookup failed, and the task the mail is tagged for (not for `parser`). */
      agent?: string;
      taskId?: string;
      /** The selectors (`s=`, of the agent's DKIM domain) whose keys could not be looked up: the message's aligned candidates (not for `parser`). */
      selectors?: string[];
    }
  | { kind: 'apply'; verdict: `applied:${ReplyStatusWord}`; reason: string; status: ReplyStatusWord; message: MessageFacts; on: DecidedTask; reply: ParsedReply; evidence: 'whole'; signature: string }
  /** An authenticated reply to a task that failed by its deadline or dispatch: kept and shown, not applied. */
  | { kind: 'late'; verdict: 'late:recorded'; reason: string; message: MessageFacts; on: DecidedTask; reply: ParsedReply; evidence: 'whole'; signature: string };

/** A refusal decision of mail that did not authenticate. */
type EarlyRefusal = Extract<Decision, { kind: 'refuse' }>;

/** What the gates that read the header block alone left for the rest of the judge. */
interface Screened {
  message: MessageFacts;
  tag: TaskTag;
  /** Gate 7's aligned signatures, for local verification. */
  aligned: { candidates: DkimSignatureInfo[]; pinned: DkimSignatureInfo | null };
}

/**
 * The gates that read the header block alone, in the judge's order (steps 0–4 of
 * {@link judgeMessage}; local verification, which reads the body, not included): the refusal, or
 * what the rest of the judge needs. `msg.raw` may be the whole message or its header block only
 * (a too-large message; the header stage of a check): gate 1's digest is then the header block's.
 */
function screen(msg: IncomingMessage, rules: JudgeRules, store: JudgeStore, sha256?: string, taskOnHeaders = true): EarlyRefusal | Screened {
  const unreadableHeader = headerBlockReadable(msg.raw, msg.size);
  // A header block that cannot be read as one is read for its task tag on its first 16 KiB alone
  // (uplink/message-facts.ts `routingFacts`): a refusal of mail tagged for a task shows on it.
  const message = unreadableHeader ? routingFacts(msg.raw, msg.size, sha256) : messageFacts(msg.raw, msg.size, sha256);
  const tagged = taskTag(message, rules.agents);
  const tag = isRefusal(tagged) ? null : tagged;
  /** Tagged mail refused before it authenticated keeps its head (of an unreadable header block, the bytes read for its tag); untagged mail nothing. */
  const early = (r: Refusal): EarlyRefusal => ({ kind: 'refuse', verdict: r.verdict, reason: r.reason, message, tag, evidence: tag ? (unreadableHeader ? 'routing' : 'head') : 'none', signature: null });

  // What was read may be nothing: no digest can tell a copy of it.
  if (msg.unreadable) return early({ verdict: `unreadable:${msg.unreadable.reason}`, reason: msg.unreadable.detail });
  // Gate 1 by the digest reads no field, so it comes before the header block's own rules: a copy
  // of mail refused as unreadable is a `duplicate`, as a copy of any other mail is.
  if (store.seenDigest(message.rawSha256)) return early(DUPLICATE_BYTES);
  if (unreadableHeader) return early(replayedSignatureUnreadable(message, (sigs, id) => store.authenticatedWith(sigs, id)) ?? unreadableHeader);
  const replayed = replayedSignature(message, (sigs, id) => store.authenticatedWith(sigs, id));
  if (replayed) return early(replayed);
  if (msg.tooLarge) {
    return early({ verdict: 'too-large', reason: `${msg.size} bytes, over mailbox.max_message_bytes (${rules.maxMessageBytes}); refused whole` });
  }
  if (!tag) return early(tagged as Refusal);

  const shape = headerShape(message);
  if (isRefusal(shape)) return early(shape);
  const from = fromIsAgent(shape.fromAddress, tag.agent);
  if (from) return early(from);
  const trusted = trustedResults(message, rules.profile);
  if (isRefusal(trusted)) return early(trusted);
  const dmarc = dmarcHolds(trusted);
  if (dmarc) return early(dmarc);
  const aligned = alignedSignatures(message, trusted, tag.agent);
  if (isRefusal(aligned)) return early(aligned);
  if (!rules.verifyDkim && !aligned.pinned) return early(UNPINNED_WITHOUT_VERIFICATION);
  // Gate 8's task rule on the header block alone, before the whole message is read, verified and
  // parsed: mail tagged for a task that is not the agent's awaiting one cannot be applied, so it must
  // not spend a check's whole-read budget (`max_fetch_per_check`) ahead of a genuine reply (attack
  // review 6, F2). Asked again inside `settle`: the task may change between.
  if (taskOnHeaders && !taskOfAgent(store, tag)) return early(unknownTask(tag));
  return { message, tag, aligned };
}

/** Gate 8's first rule: the tagged task exists, is the agent's, and has a current turn; undefined when not. */
function taskOfAgent(store: JudgeStore, tag: TaskTag): { task: TaskRow; turn: TurnRow } | undefined {
  const found = store.task(tag.taskId);
  return found && found.task.agent === tag.agent.name && found.turn ? { task: found.task, turn: found.turn } : undefined;
}

/**
 * The judge on a message's header block alone (the header stage of a mailbox check,
 * src/core/mail-check.ts): the refusal {@link judgeMessage} would give the whole message, when one
 * of the gates that read only the header block refuses it; null when the whole message must be
 * judged. Gate 1's digest is the header block's (`msg.raw`), so only a copy of mail refused on its
 * header block is recognised by it here. `o.taskOnHeaders: false` leaves out gate 8's task rule
 * (see {@link JudgeFacts.taskOnHeaders}). Synchronous: the caller runs it inside the transaction
 * that records the refusal.
 */
export function judgeHeaderBlock(msg: IncomingMessage, rules: JudgeRules, store: JudgeStore, o: { taskOnHeaders?: boolean } = {}): EarlyRefusal | null {
  const s = screen(msg, rules, store, undefined, o.taskOnHeaders);
  return 'kind' in s ? s : null;
}

/**
 * The judge on the first bytes of a header block that runs on past them (`msg.raw` is that
 * prefix, `msg.size` the whole message's; the header stage of a check, docs/architecture.md "The
 * header stage"): the row of the gate table that reads the provider's stamp alone. In order, on the
 * prefix's whole fields (uplink/gates.ts `prefixFacts`): gate 1 by a DKIM signature and the
 * Message-ID the prefix shows (a replay: the whole judge finds them too, and says `duplicate`);
 * then gates 5–7 on the stamp (uplink/stamp.ts `stampRefusal`); where the stamp refuses, gate 1
 * by the prefix's digest first (a copy of mail refused on its stamp is a `duplicate`: that row holds
 * the digest of the same prefix). The ledger row names the task when the Subject
 * fields in the prefix carry one tag of a configured agent (and keeps the prefix as evidence), as
 * {@link judgeHeaderBlock} does for the whole block. Synchronous: the caller records the refusal
 * in its transaction.
 *
 * @returns the refusal; null when the whole header block must be read (the stamp holds an aligned
 *   pass, or the prefix does not reach the end of the stamp)
 */
export function judgeStamp(msg: Pick<IncomingMessage, 'raw' | 'size'>, rules: JudgeRules, store: JudgeStore): EarlyRefusal | null {
  const message = prefixFacts(msg.raw, msg.size);
  const tagged = taskTag(message, rules.agents);
  const tag = isRefusal(tagged) ? null : tagged;
  const early = (r: Refusal): EarlyRefusal => ({ kind: 'refuse', verdict: r.verdict, reason: r.reason, message, tag, evidence: tag ? 'head' : 'none', signature: null });
  const replayed = replayedSignature(message, (sigs, id) => store.authenticatedWith(sigs, id));
  if (replayed) return early(replayed);
  const refused = stampRefusal(message.fields, rules.profile, rules.agents, msg.raw);
  if (!refused) return null;
  // Gate 1 by the digest of the bytes read (a copy of mail refused on its stamp: its row holds the
  // digest of the same prefix), asked only of a prefix the stamp refuses anyway, so a digest of
  // 16 KiB can never refuse what the whole judge would apply.
  if (store.seenDigest(message.rawSha256)) return early({ verdict: 'duplicate', reason: `${DUPLICATE_BYTES.reason} (the first ${msg.raw.length} bytes of a longer header block, which its provider's stamp refuses: ${refused.verdict})` });
  return early(onTheStamp(refused, msg.raw.length, message.fields.length));
}

/**
 * The message judge: every gate, in order, and every rule about one fetched message
 * (docs/architecture.md, "The gates"). The first rule that refuses names the verdict; a reply is
 * applied only when every gate passed.
 *
 * 0. the mailbox could not read it ⇒ `unreadable:<reason>` (nothing about it can be judged);
 *    then gate 1 by the digest: the same raw bytes are in the ledger ⇒ `duplicate` (no field read);
 *    its header block cannot be read as one ⇒ `too-large-header` or `unreadable:<why>`
 *    (uplink/gates.ts `headerBlockReadable`: only its first 16 KiB are read, for the task tag the
 *    ledger row names: uplink/gates.ts `routingFacts`; and first for gate 1 by a DKIM signature
 *    in them, `replayedSignatureUnreadable`, so a padded replay is a `duplicate`; the row keeps
 *    those 16 KiB at most, {@link UNREADABLE_RAW_KEEP_BYTES});
 * 1. gate 1: a DKIM signature and the Message-ID of mail authenticated before (a replay) ⇒
 *    `duplicate`;
 * 2. larger than `mailbox.max_message_bytes` ⇒ `too-large` (refused whole, body never read);
 * 3. gate 2: exactly one subject tag of a configured agent, else `no-task-id`;
 * 4. gates 3–7: header shape, From, trusted Authentication-Results above the border, DMARC, an
 *    aligned DKIM signature; then gate 8's task rule (the tagged task exists, is the agent's and
 *    has a turn, else `unknown-task`), so mail that cannot be applied is refused before it is read
 *    whole — steps 0–4 read the header block alone ({@link judgeHeaderBlock});
 * 5. gate 7 again: the aligned signature verifies locally (`mailbox.verify_dkim`); a DKIM key
 *    lookup that failed temporarily ⇒ `defer` for {@link TEMPORARY_RETRY_MS} after arrival, then
 *    the refusal; the MIME parser could not be loaded (uplink/reply-format.ts
 *    `ParserUnavailableError`) ⇒ `defer` until it can;
 * 6. inside `settle`: gate 1 again (a concurrent process may have recorded the bytes, or the
 *    signature, while this one authenticated), then gates 8–11 on the task as the store holds it:
 *    the task exists (again: it may have changed since step 4), the Date window, gate 8a (Message-ID replay), the live token, the task awaits
 *    the agent (or failed by deadline/dispatch ⇒ `late`), the status line.
 *
 * Never throws on hostile bytes; a defect of ours (or a store failure) propagates, and the
 * caller records the message as `unreadable`.
 *
 * @returns what `facts.settle` returned for the decision
 */
export async function judgeMessage<R>(msg: IncomingMessage, facts: JudgeFacts<R>): Promise<R> {
  const { rules, store } = facts;
  // The digest of a large message is taken in slices, the event loop answering between them.
  const screened = screen(msg, rules, store, await sha256Sliced(msg.raw), facts.taskOnHeaders);
  if ('kind' in screened) return facts.settle(() => screened);
  const { message, tag, aligned } = screened;

  let signature: DkimSignatureInfo;
  if (rules.verifyDkim) {
    const dkim = await dkimVerifies(msg.raw, aligned.candidates, tag.agent, facts.resolver, msg.receivedAt);
    if (isRefusal(dkim) && dkim.temporary) {
      const since = msg.receivedAt ?? facts.now();
      if (facts.now() - since < TEMPORARY_RETRY_MS) return facts.settle(() => ({ kind: 'defer', reason: dkim.reason, message, agent: tag.agent.name, taskId: tag.taskId, selectors: aligned.candidates.map((c) => c.s) }));
      const final: Refusal = { ...dkim, reason: `${dkim.reason}; still failing ${Math.round(TEMPORARY_RETRY_MS / 3600_000)} h after arrival` };
      return facts.settle(() => ({ kind: 'refuse', verdict: final.verdict, reason: final.reason, message, tag, evidence: 'head', signature: null }));
    }
    if (isRefusal(dkim)) return facts.settle(() => ({ kind: 'refuse', verdict: dkim.verdict, reason: dkim.reason, message, tag, evidence: 'head', signature: null }));
    signature = dkim;
  } else {
    signature = aligned.pinned!; // screen() refused the unpinned case
  }
  const key = signatureKey(signature.b);

  let reply: ParsedReply;
  try {
    reply = await parseReply(msg.raw, { maxAttachmentBytes: rules.maxAttachmentBytes });
  } catch (err) {
    // The parser is loaded at first use: if it cannot be, nothing of the body was read, and a
    // genuine reply must not be refused as one without a token; it is judged again next check.
    if (err instanceof ParserUnavailableError) return facts.settle(() => ({ kind: 'defer', reason: err.message, message, cause: 'parser' }));
    throw err;
  }
  await facts.stage?.(reply);
  return facts.settle((): Decision => {
    // Authenticated from here on: only an applied or late reply keeps the whole message.
    const refused = (r: Refusal): Decision => ({ kind: 'refuse', verdict: r.verdict, reason: r.reason, message, tag, evidence: 'head', signature: key });
    if (store.seenDigest(message.rawSha256)) return refused(DUPLICATE_BYTES);
    const replayed = replayedSignature(message, (sigs, id) => store.authenticatedWith(sigs, id));
    if (replayed) return refused(replayed);
    const found = taskOfAgent(store, tag);
    if (!found) return refused(unknownTask(tag));
    const { task, turn } = found;
    const date = dateInWindow(message.date, { dispatchedAt: turn.createdAt, now: facts.now(), skewMs: rules.dateSkewMs });
    if (date) return refused(date);
    if (message.messageId !== null && store.messageIdApplied(task.id, message.messageId)) return refused(replayedMessageId(message.messageId));
    const token = tokenHolds(reply, (presented) => tokensEqual(presented, turn.replyToken));
    if (token) return refused(token);
    const on: DecidedTask = { tag, task, turn };
    const open = taskOpen(task.state, task.failedBy);
    if (open === 'late') {
      const reason = `gate 10: the task failed (${task.failedBy}) before this authenticated reply; kept and shown`;
      return { kind: 'late', verdict: 'late:recorded', reason, message, on, reply, evidence: 'whole', signature: key };
    }
    if (open !== 'open') return refused(open);
    const status = replyStatus(reply);
    if (isRefusal(status)) return refused(status);
    return { kind: 'apply', verdict: `applied:${status}`, reason: `all gates passed; status ${status}`, status, message, on, reply, evidence: 'whole', signature: key };
  });
}
