import { createHash } from 'node:crypto';
import type { AgentConfig } from '../config/config.js';
import type { FailedBy, TaskState } from '../store/task-state.js';
import { plural } from '../plural.js';
import { dkimResultNames, findTrustedResults, type ProviderProfile } from './border.js';
import { parseDkimSignatures, verifyDkimLocally, type DnsResolver } from './dkim.js';
import { fieldsNamed, parseHeaderBlock, parseSingleAddress, splitMessage, type HeaderField } from './raw-headers.js';
import { parseReply, type ParsedReply } from './reply-format.js';
import { decodeSubject, findTaskTags } from './subject-tag.js';
import type { Verdict } from './verdicts.js';

/**
 * The gate stack (BRIEF §5), as pure functions in three phases so the I/O stays at the edges:
 * 1. {@link identify} — gates 1–2, synchronous, needs only "were these bytes seen?";
 * 2. {@link authenticate} — gates 3–7, asynchronous (local DKIM verification looks keys up in DNS);
 * 3. {@link judgeReply} — gates 8–11, synchronous on facts about the task, run by the caller inside
 *    the transaction that records the verdict and applies the reply.
 * The first gate that fails names the verdict; nothing is promoted unless every gate passed.
 */

/** A gate's refusal: the verdict and a human reason naming the gate and the header or value. */
export interface Refusal {
  verdict: Verdict;
  reason: string;
  /**
   * The refusal rests on a temporary failure (a DKIM key lookup that could not reach DNS): the
   * caller should judge the message again later rather than record this verdict for good.
   */
  temporary?: boolean;
}

/** What the ledger records about any fetched message, whatever its verdict. */
export interface MessageFacts {
  fields: HeaderField[];
  /** Header-block lines that are neither a field nor a continuation (see parseHeaderBlock). */
  malformedHeaderLines: number;
  rawSha256: string;
  size: number;
  /** First occurrence of each, as written (the ledger shows them; trust decisions use `fields`). */
  messageId: string | null;
  from: string | null;
  subject: string | null;
  date: string | null;
}

/** A message that passed gates 1–2: it names exactly one task of one configured agent. */
export interface Identified extends MessageFacts {
  agent: AgentConfig;
  taskId: string;
}

function first(fields: HeaderField[], name: string): string | null {
  return fieldsNamed(fields, name)[0]?.value ?? null;
}

/**
 * The msg-id of a Message-ID field (RFC 5322 §3.6.4): the `<…>` part, without the comments and
 * whitespace relaxed DKIM canonicalization lets anyone add without breaking the signature — so a
 * padded replay of an applied reply still matches it at gate 8a.
 */
export function normalizeMessageId(value: string | null): string | null {
  if (value === null) return null;
  const m = /<[^<>\s]+>/.exec(value);
  return m ? m[0] : value.replace(/\s+/g, '') || null;
}

/** Header facts of a message; never throws. */
export function messageFacts(raw: Buffer, size = raw.length): MessageFacts {
  const { fields, malformedLines } = parseHeaderBlock(splitMessage(raw).header);
  const subject = first(fields, 'subject');
  return {
    fields,
    malformedHeaderLines: malformedLines,
    rawSha256: createHash('sha256').update(raw).digest('hex'),
    size,
    messageId: normalizeMessageId(first(fields, 'message-id')),
    from: first(fields, 'from'),
    subject: subject === null ? null : decodeSubject(subject),
    date: first(fields, 'date'),
  };
}

/**
 * Gates 1–2: the same raw bytes were recorded before ⇒ `duplicate`; not exactly one subject tag
 * naming a task of a configured agent ⇒ `no-task-id` (untagged mail is FYI, never instructions).
 */
export function identify(
  facts: MessageFacts,
  agents: readonly AgentConfig[],
  seenDigest: (sha256: string) => boolean,
): Identified | (Refusal & { tagged?: { taskId: string; agent: AgentConfig } }) {
  const subjects = fieldsNamed(facts.fields, 'subject');
  const tags = subjects.flatMap((f) => findTaskTags(decodeSubject(f.value)));
  const known = tags.filter((t) => agents.some((a) => a.tag.toUpperCase() === t.tag));
  const distinct = new Set(known.map((t) => `${t.tag}:${t.taskId}`));
  const tag = distinct.size === 1 ? known[0]! : undefined;
  const agent = tag && agents.find((a) => a.tag.toUpperCase() === tag.tag)!;
  if (seenDigest(facts.rawSha256)) {
    // The tag is kept on the refusal only so the ledger row can name the task.
    return { verdict: 'duplicate', reason: 'gate 1: the same raw bytes are already in the ledger', ...(tag && agent ? { tagged: { taskId: tag.taskId, agent } } : {}) };
  }
  if (!tag || !agent) {
    const reason =
      distinct.size === 0
        ? `gate 2: no subject tag of a configured agent${tags.length ? ` (found ${tags.map((t) => t.tag).join(', ')})` : ''}`
        : `gate 2: ${distinct.size} different task tags in the subject`;
    return { verdict: 'no-task-id', reason };
  }
  return { ...facts, agent, taskId: tag.taskId };
}

export interface AuthOptions {
  profile: ProviderProfile;
  /** Verify the aligned signature locally with mailauth (issue 3: on by default). */
  verifyDkim: boolean;
  resolver: DnsResolver;
  /** When the mailbox received the message (ms since the epoch), for key and `x=` expiry; now when unknown. */
  receivedAt?: number | null;
}

const DMARC_FATAL = new Set(['fail', 'temperror', 'permerror']);
/** Header fields that say how the body is decoded (RFC 2045 §4–6): never more than one of each. */
const MIME_FIELDS = ['Content-Type', 'Content-Transfer-Encoding', 'MIME-Version'] as const;
/** Header fields the aligned signature must cover (its h= tag, lower-cased). */
const SIGNED_HEADERS = ['from', 'subject', 'date', 'message-id'] as const;

/**
 * Gates 3–7 on an identified message (BRIEF §5; FACTS.md "Mail authentication").
 * @returns null when the message is authenticated as the agent's, else the refusal
 */
export async function authenticate(raw: Buffer, m: Identified, o: AuthOptions): Promise<Refusal | null> {
  // Gate 3: a line that is neither a field nor a continuation still verifies under relaxed DKIM
  // (it is not part of any field), but a MIME parser may take it for the start of the body.
  if (m.malformedHeaderLines > 0) {
    return { verdict: 'auth:duplicate-header', reason: `gate 3: ${plural(m.malformedHeaderLines, 'line')} in the header block ${m.malformedHeaderLines === 1 ? 'is' : 'are'} neither a header field nor a continuation` };
  }
  // Gate 3: a prepended second From/Subject still verifies under DKIM when h= does not oversign (e2a PR #751).
  for (const name of ['From', 'Subject', 'Date', 'Message-ID']) {
    const n = fieldsNamed(m.fields, name).length;
    if (n !== 1) return { verdict: 'auth:duplicate-header', reason: `gate 3: ${n} ${name} headers; exactly one is required` };
  }
  // Gate 3: the MIME fields decide how the body is decoded. A DKIM verifier binds the signed
  // (lowest) instance of a field (RFC 6376 §5.4.2) while a MIME parser reads the top one, so a
  // prepended unsigned Content-Type changes the text judged without breaking the signature.
  for (const name of MIME_FIELDS) {
    const n = fieldsNamed(m.fields, name).length;
    if (n > 1) return { verdict: 'auth:duplicate-header', reason: `gate 3: ${n} ${name} headers; at most one is allowed` };
  }
  const from = parseSingleAddress(fieldsNamed(m.fields, 'from')[0]!.value);
  if (!('address' in from)) {
    return { verdict: 'auth:duplicate-header', reason: `gate 3: From must hold exactly one address (${from.problem})` };
  }
  // Gate 4.
  if (from.address !== m.agent.address) {
    return { verdict: 'auth:from-mismatch', reason: `gate 4: From is ${from.address}, not ${m.agent.address}` };
  }
  // Gate 5: only Authentication-Results stamped by the provider above the border count.
  const trust = findTrustedResults(m.fields, o.profile);
  if (!trust.ok) return { verdict: trust.verdict, reason: `gate 5: ${trust.reason}` };
  const r = trust.results;
  // Gate 6.
  const dmarcConflict = r.conflicts.filter((c) => !/^dkim\b/i.test(c));
  if (dmarcConflict.length) return { verdict: 'auth:dmarc-fail', reason: `gate 6: trusted results conflict: ${dmarcConflict.join('; ')}` };
  const badDmarc = r.dmarc.find((d) => DMARC_FATAL.has(d.result));
  if (badDmarc) return { verdict: 'auth:dmarc-fail', reason: `gate 6: trusted dmarc=${badDmarc.result}` };
  // Gate 7: a trusted dkim=pass for exactly the agent domain, naming a signature present in the message.
  if (r.conflicts.length) return { verdict: 'auth:dkim-unaligned', reason: `gate 7: trusted results conflict: ${r.conflicts.join('; ')}` };
  // Every DKIM-Signature of the agent domain that a trusted dkim=pass names: by header.b prefix
  // (at least 8 characters: RFC 6008 §3), or — providers that write no header.b (Yahoo: header.s;
  // Microsoft: header.d only, docs/providers.md) — by selector or domain, which local verification
  // must then confirm. A message may carry several (a key rotation signs with the old and the new
  // key); one of them must also stand on its own below.
  const signatures = parseDkimSignatures(m.fields).filter((s) => s.d === m.agent.dkimDomain);
  const passes = r.dkim.filter((d) => d.result === 'pass' && d.headerD !== null && d.headerD.toLowerCase() === m.agent.dkimDomain);
  const named = signatures.map((s) => ({ s, how: passes.map((d) => dkimResultNames(d, s)) }));
  const aligned = named.filter((n) => n.how.some((h) => h !== null)).map((n) => n.s);
  const pinned = new Set(named.filter((n) => n.how.includes('header.b')).map((n) => n.s));
  if (aligned.length === 0) {
    const seen = r.dkim.map((d) => `dkim=${d.result} header.d=${d.headerD ?? '?'}`).join(', ') || 'no dkim result';
    return {
      verdict: 'auth:dkim-unaligned',
      reason: `gate 7: no trusted dkim=pass with header.d=${m.agent.dkimDomain} matching a DKIM-Signature (${seen})`,
    };
  }
  // A signature counts only if it covers what the later gates rely on (the tag, the Date window,
  // the Message-ID replay check), and has no l= limit: mailauth 4.x passes an l= signature with
  // appended text (FACTS.md).
  const problems: string[] = [];
  const candidates = aligned.filter((s) => {
    const missing = SIGNED_HEADERS.filter((h) => !s.signedHeaders.includes(h));
    if (s.bodyLengthLimited) problems.push(`s=${s.s} has an l= body length limit`);
    else if (missing.length) problems.push(`s=${s.s} does not sign ${missing.join(', ')}`);
    return !s.bodyLengthLimited && missing.length === 0;
  });
  if (candidates.length === 0) return { verdict: 'auth:dkim-unverified', reason: `gate 7: no usable aligned DKIM-Signature (${problems.join('; ')})` };
  if (!o.verifyDkim && !candidates.some((s) => pinned.has(s))) {
    return { verdict: 'auth:dkim-unverified', reason: "gate 7: the provider's dkim=pass names no header.b, so only local verification can tell which signature passed, and mailbox.verify_dkim is false" };
  }
  if (o.verifyDkim) {
    // Keys and x= expiry are judged as of when the mailbox received the message, not when we read it.
    const local = await verifyDkimLocally(raw, o.resolver, o.receivedAt ? { now: new Date(o.receivedAt) } : {});
    const verified = candidates.find((s) => local.some((l) => l.b === s.b && l.status === 'pass'));
    if (!verified) {
      const mine = candidates.map((s) => local.find((x) => x.b === s.b));
      const seen = candidates.map((s, i) => `s=${s.s}: ${mine[i] ? `${mine[i].status} (${mine[i].info})` : 'no result'}`).join('; ');
      // Only a DNS failure for every candidate is temporary; a missing key or a bad signature is final.
      const temporary = mine.every((l) => l?.status === 'temperror');
      return { verdict: 'auth:dkim-unverified', reason: `gate 7: local DKIM verification of d=${m.agent.dkimDomain} did not pass (${seen})`, temporary };
    }
  }
  return null;
}

/** What gates 8–11 need to know about the tagged task, read inside the applying transaction. */
export interface TaskFacts {
  /** The task exists and belongs to the agent whose tag the subject carries. */
  exists: boolean;
  state?: TaskState;
  failedBy?: FailedBy | null;
  /** True when this Message-ID was already applied (or kept late) for the task. */
  messageIdApplied: boolean;
  /** Constant-time comparison of a presented token with the live one (src/core/token.ts). */
  tokenMatches: (presented: string) => boolean;
  /**
   * The Date window (issue 3): the reply's Date must lie within `skewMs` before the current
   * turn's dispatch and `skewMs` after now (ms since the epoch). Omitted, no Date check is made.
   */
  dateWindow?: { dispatchedAt: number; now: number; skewMs: number };
}

export type ReplyStatusWord = 'done' | 'input-required' | 'failed' | 'working';
const STATUSES: ReadonlySet<string> = new Set(['done', 'input-required', 'failed', 'working']);

/** The outcome of gates 8–11: a refusal, a late reply to keep, or a reply to apply. */
export type Judgement =
  | Refusal
  | { verdict: 'late:recorded'; reason: string }
  | { verdict: `applied:${ReplyStatusWord}`; reason: string; status: ReplyStatusWord };

/** Gates 8–11 (BRIEF §5). Pure: the caller reads `TaskFacts` and applies the judgement in one transaction. */
export function judgeReply(m: Identified, reply: ParsedReply, t: TaskFacts): Judgement {
  if (!t.exists || !t.state) return { verdict: 'unknown-task', reason: `gate 8: no task ${m.taskId} for agent ${m.agent.name}` };
  if (t.dateWindow) {
    const w = t.dateWindow;
    const date = m.date === null ? Number.NaN : Date.parse(m.date);
    if (Number.isNaN(date)) return { verdict: 'auth:date-window', reason: `gate 8: the Date header ${JSON.stringify(m.date)} cannot be parsed` };
    if (date < w.dispatchedAt - w.skewMs) {
      return { verdict: 'auth:date-window', reason: `gate 8: Date ${new Date(date).toISOString()} is before the dispatch of this turn (${new Date(w.dispatchedAt).toISOString()})` };
    }
    if (date > w.now + w.skewMs) return { verdict: 'auth:date-window', reason: `gate 8: Date ${new Date(date).toISOString()} is in the future` };
  }
  // Gate 8a comes after authentication, so a forged mail cannot pre-empt a genuine reply by claiming its Message-ID.
  if (m.messageId !== null && t.messageIdApplied) {
    return { verdict: 'duplicate', reason: `gate 8a: Message-ID ${m.messageId} was already applied to this task` };
  }
  if (reply.token === null) {
    const why =
      reply.tokenProblem === 'several'
        ? 'more than one reply_token line'
        : reply.tokenProblem === 'only-in-quote'
          ? 'the reply_token appears only in quoted text'
          : reply.tokenProblem === 'unparsed'
            ? `the body was not read: ${reply.unparsed ?? 'over the parse budget'}`
            : 'no reply_token line in the reply block';
    return { verdict: 'no-token', reason: `gate 9: ${why}` };
  }
  if (!t.tokenMatches(reply.token)) return { verdict: 'bad-token', reason: "gate 9: the reply_token is not the task's live token (used, revoked or wrong)" };
  const open = t.state === 'SUBMITTED' || t.state === 'WORKING';
  if (!open) {
    if (t.state === 'FAILED' && (t.failedBy === 'deadline' || t.failedBy === 'dispatch')) {
      return { verdict: 'late:recorded', reason: `gate 10: the task failed (${t.failedBy}) before this authenticated reply; kept and shown` };
    }
    return { verdict: 'task-closed', reason: `gate 10: the task is ${t.state.toLowerCase()}` };
  }
  if (reply.status === null || !STATUSES.has(reply.status)) {
    const why = reply.statusProblem === 'several' ? 'more than one status line' : reply.status === null ? 'no status line' : `status "${reply.status}"`;
    return { verdict: 'bad-status', reason: `gate 11: ${why}; expected done, input-required, failed or working` };
  }
  const status = reply.status as ReplyStatusWord;
  return { verdict: `applied:${status}`, reason: `all gates passed; status ${status}`, status };
}

export { parseReply };
