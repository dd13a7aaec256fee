import type { AgentConfig } from '../config/config.js';
import { plural } from '../plural.js';
import { dkimResultNames, findTrustedResults, type DkimAr, type ProviderProfile, type TrustedResults, type TrustOutcome } from './border.js';
import { parseDkimSignatures, verifyDkimLocally, type DkimSignatureInfo, type DnsResolver } from './dkim.js';
import { copiedSignatures } from './dkim-fields.js';
import type { BudgetTimer } from './offload.js';
import { fieldsNamed, parseSingleAddress } from './raw-headers.js';
import { REPLY_STATUS_WORDS, type ParsedReply, type ReplyStatusWord } from './reply-format.js';
import { SUBJECT_DECODE_CHARS, SUBJECT_FIELDS_READ, subjectTags, type SubjectWork } from './subject-tag.js';
import type { Verdict } from './verdicts.js';

export { headerBlockReadable, MAX_HEADER_BLOCK_BYTES, MAX_HEADER_LINES, STAMP_PREFIX_BYTES } from './header-block.js';
export { messageFacts, normalizeMessageId, prefixFacts, recordableFacts, routingFacts, unparsedFacts, type MessageFacts } from './message-facts.js';
import type { MessageFacts } from './message-facts.js';

/**
 * The rules of the gates, one pure function per gate (docs/architecture.md, "The gates"). Each
 * returns a {@link Refusal} naming its verdict and why, or what the next gate needs. The order
 * they run in, and every rule that is not a property of the message alone (the duplicate check,
 * too-large mail, the DNS retry), live in one place: `judgeMessage` (src/core/judge.ts).
 */

/** A gate's refusal: the verdict and a human reason naming the gate and the header or value. */
export interface Refusal {
  verdict: Verdict;
  reason: string;
  /**
   * The refusal rests on a temporary failure (a DKIM key lookup that could not reach DNS): the
   * judge may look at the message again later rather than record this verdict for good.
   */
  temporary?: boolean;
}


/** The one task a subject names: a task id and the configured agent whose tag carries it. */
export interface TaskTag {
  agent: AgentConfig;
  taskId: string;
}


/** True when a gate refused (every gate returns a Refusal or what the next gate needs). */
export function isRefusal<T>(x: T | Refusal): x is Refusal {
  return typeof x === 'object' && x !== null && 'verdict' in x;
}



/** Gate 1's refusal: the same raw bytes are in the ledger already (a re-upload, a rescan, a copy). */
export const DUPLICATE_BYTES: Refusal = { verdict: 'duplicate', reason: 'gate 1: the same raw bytes are already in the ledger' };

/**
 * The key a DKIM signature is recognised by: its b= value decoded and encoded again, so the
 * whitespace and the stray characters a base64 decoder skips (and a verifier with it) cannot make
 * a copy of a signature look new.
 */
export function signatureKey(b: string): string {
  return Buffer.from(b, 'base64').toString('base64');
}

/**
 * Gate 1, by signature: the message carries a DKIM signature that authenticated a mail already in
 * the ledger, and that mail's Message-ID — a replay of it, whatever unsigned headers were added or
 * changed (RFC 6376 §8.6: a signed message can be re-sent as is). Read from the header block alone;
 * `authenticatedWith` answers from the ledger (only mail that passed gate 7 is named there, so a
 * forgery cannot claim a genuine reply's signature before the genuine reply arrives). A header
 * block with more than {@link MAX_DKIM_SIGNATURES} DKIM-Signature fields is not looked at: gate 3
 * refuses it, and parsing each and asking the ledger about each cost about 12 µs + 12 µs a field,
 * 90 ms for the 2,700 fields a 256 KiB header block holds (a replay padded with them reads on).
 */
export function replayedSignature(facts: MessageFacts, authenticatedWith: (signatures: string[], messageId: string | null) => number | undefined): Refusal | null {
  if (facts.messageId === null) return null;
  return replayedBy(facts, facts.messageId, authenticatedWith);
}

/**
 * Gate 1, by signature, for a header block that cannot be read as one (`headerBlockReadable`), on
 * the whole fields of its first 16 KiB (message-facts.ts `routingFacts`) — before the verdict that
 * says it cannot be read: as {@link replayedSignature} with the Message-ID when those fields hold
 * it, and by the signature alone when they do not (a replay padded so that its Message-ID lies
 * past them). The signature alone suffices here, and only here: such a message is refused
 * whichever verdict names it, so a forgery that copies a genuine signature's `b=` gains nothing
 * but the name, and no mail the judge would apply is refused by it (README, Security model).
 */
export function replayedSignatureUnreadable(facts: MessageFacts, authenticatedWith: (signatures: string[], messageId: string | null) => number | undefined): Refusal | null {
  return replayedBy(facts, facts.messageId, authenticatedWith);
}

function replayedBy(facts: MessageFacts, messageId: string | null, authenticatedWith: (signatures: string[], messageId: string | null) => number | undefined): Refusal | null {
  if (fieldsNamed(facts.fields, 'DKIM-Signature').length > MAX_DKIM_SIGNATURES) return null;
  const keys = parseDkimSignatures(facts.fields).map((s) => signatureKey(s.b)).filter((k) => k !== '');
  if (keys.length === 0) return null;
  const id = authenticatedWith([...new Set(keys)], messageId);
  if (id === undefined) return null;
  if (messageId === null) return { verdict: 'duplicate', reason: `gate 1: a DKIM signature of mail authenticated before (ledger #${id}), in the first bytes of a header block that cannot be read as one: a replay` };
  return { verdict: 'duplicate', reason: `gate 1: the DKIM signature and Message-ID ${messageId} of mail authenticated before (ledger #${id}): a replay` };
}

/**
 * Gate 2: exactly one subject tag `[<TAG>:<task id>]` naming a task of a configured agent
 * (untagged mail is FYI, never instructions). Both Subject fields are read when there are two, so
 * a prepended one cannot hide a tag. The work is bounded (subject-tag.ts `subjectTags`): a header
 * block with more than {@link SUBJECT_FIELDS_READ} Subject fields is refused by gate 3's rule here
 * (`auth:duplicate-header`, RFC 5322 §3.6), none of them decoded and no task named; Subjects with
 * more than {@link SUBJECT_DECODE_CHARS} characters of encoded words are `no-task-id`, undecoded.
 * Also read before gate 2 decides, so a refusal by an earlier rule can name the task.
 * @param work counted into when given (a test's seam)
 */
export function taskTag(facts: MessageFacts, agents: readonly AgentConfig[], work?: SubjectWork): TaskTag | Refusal {
  const subjects = fieldsNamed(facts.fields, 'subject');
  const tags = subjectTags(subjects.map((f) => f.value), work);
  if (!Array.isArray(tags)) {
    return tags.over === 'fields'
      ? { verdict: 'auth:duplicate-header', reason: `gate 3, at gate 2: ${tags.count} Subject headers; exactly one is required, and past ${SUBJECT_FIELDS_READ} none is read for a task tag` }
      : { verdict: 'no-task-id', reason: `gate 2: the Subject holds ${tags.count} characters of encoded words, over ${SUBJECT_DECODE_CHARS}; not decoded, so no task tag is read` };
  }
  const known = tags.filter((t) => agents.some((a) => a.tag.toUpperCase() === t.tag));
  const distinct = new Set(known.map((t) => `${t.tag}:${t.taskId}`));
  const tag = distinct.size === 1 ? known[0]! : undefined;
  const agent = tag && agents.find((a) => a.tag.toUpperCase() === tag.tag);
  if (tag && agent) return { agent, taskId: tag.taskId };
  const reason =
    distinct.size === 0
      ? `gate 2: no subject tag of a configured agent${tags.length ? ` (found ${tags.map((t) => t.tag).join(', ')})` : ''}`
      : `gate 2: ${distinct.size} different task tags in the subject`;
  return { verdict: 'no-task-id', reason };
}

/** Header fields that say how the body is decoded (RFC 2045 §4–6): never more than one of each. */
const MIME_FIELDS = ['Content-Type', 'Content-Transfer-Encoding', 'MIME-Version'] as const;

/**
 * The longest From field (unfolded, in characters) gate 3 hands to the address parser. One mailbox
 * is a path of at most 256 octets (RFC 5321 §4.5.3.1.3) and a display name; a field longer than
 * this cannot be one address a person would send from, and parsing it costs about 0.3 ms a KiB on
 * the main thread (a forged From of 40,000 addresses, 200 KB: 67 ms each).
 */
export const MAX_FROM_CHARS = 2048;

/**
 * The most DKIM-Signature fields a message may carry. A verifier checks each one (a key lookup in
 * DNS and an RSA or Ed25519 verification, RFC 6376 §6.1), so without a cap anyone holding one
 * genuine signed mail could add a thousand fields and spend seconds of the check on it. Real mail
 * carries one to three (the author's domain, an ESP, a mailing list; ARC seals are other fields).
 */
export const MAX_DKIM_SIGNATURES = 8;

/**
 * Gate 3: the header block is well formed; From, Subject, Date and Message-ID appear exactly
 * once (RFC 5322 §3.6 allows at most one of each; a prepended second From or Subject still
 * verifies under DKIM when h= does not oversign, RFC 6376 §8.15), Content-Type,
 * Content-Transfer-Encoding and MIME-Version at most once, DKIM-Signature at most
 * {@link MAX_DKIM_SIGNATURES} times; and From holds one address.
 * @returns the From address, lower-cased
 */
export function headerShape(facts: MessageFacts): { fromAddress: string } | Refusal {
  // A line that is neither a field nor a continuation still verifies under relaxed DKIM (it is
  // not part of any field), but a MIME parser may take it for the start of the body.
  if (facts.malformedHeaderLines > 0) {
    return { verdict: 'auth:duplicate-header', reason: `gate 3: ${plural(facts.malformedHeaderLines, 'line')} in the header block ${facts.malformedHeaderLines === 1 ? 'is' : 'are'} neither a header field nor a continuation` };
  }
  for (const name of ['From', 'Subject', 'Date', 'Message-ID']) {
    const n = fieldsNamed(facts.fields, name).length;
    if (n !== 1) return { verdict: 'auth:duplicate-header', reason: `gate 3: ${n} ${name} headers; exactly one is required` };
  }
  // Gate 3: the MIME fields decide how the body is decoded. A DKIM verifier binds the signed
  // (lowest) instance of a field (RFC 6376 §5.4.2) while a MIME parser reads the top one, so a
  // prepended unsigned Content-Type changes the text judged without breaking the signature.
  for (const name of MIME_FIELDS) {
    const n = fieldsNamed(facts.fields, name).length;
    if (n > 1) return { verdict: 'auth:duplicate-header', reason: `gate 3: ${n} ${name} headers; at most one is allowed` };
  }
  const signatures = fieldsNamed(facts.fields, 'DKIM-Signature').length;
  if (signatures > MAX_DKIM_SIGNATURES) {
    return { verdict: 'auth:duplicate-header', reason: `gate 3: ${signatures} DKIM-Signature headers; at most ${MAX_DKIM_SIGNATURES} are verified` };
  }
  const fromValue = fieldsNamed(facts.fields, 'from')[0]!.value;
  if (fromValue.length > MAX_FROM_CHARS) {
    return { verdict: 'auth:duplicate-header', reason: `gate 3: From must hold exactly one address (the field is ${fromValue.length} characters, over ${MAX_FROM_CHARS})` };
  }
  const from = parseSingleAddress(fromValue);
  if (!('address' in from)) {
    return { verdict: 'auth:duplicate-header', reason: `gate 3: From must hold exactly one address (${from.problem})` };
  }
  return { fromAddress: from.address };
}

/** Gate 4: From is the agent's configured address. */
export function fromIsAgent(fromAddress: string, agent: AgentConfig): Refusal | null {
  if (fromAddress === agent.address) return null;
  return { verdict: 'auth:from-mismatch', reason: `gate 4: From is ${fromAddress}, not ${agent.address}` };
}

/**
 * Gate 5: only Authentication-Results stamped by the provider's authserv-id above the border
 * count (RFC 8601 §5; the border rule in src/uplink/border.ts).
 */
export function trustedResults(facts: MessageFacts, profile: ProviderProfile): TrustedResults | Refusal {
  return gate5(findTrustedResults(facts.fields, profile));
}

/** Gate 5's answer for the border rule's outcome (src/uplink/border.ts). */
export function gate5(trust: TrustOutcome): TrustedResults | Refusal {
  if (!trust.ok) return { verdict: trust.verdict, reason: `gate 5: ${trust.reason}` };
  return trust.results;
}

const DMARC_FATAL = new Set(['fail', 'temperror', 'permerror']);

/** Gate 6: no trusted dmarc=fail/temperror/permerror (RFC 7489 §6.6.2), and no conflict among the trusted results but on dkim. */
export function dmarcHolds(r: TrustedResults): Refusal | null {
  const dmarcConflict = r.conflicts.filter((c) => !/^dkim\b/i.test(c));
  if (dmarcConflict.length) return { verdict: 'auth:dmarc-fail', reason: `gate 6: trusted results conflict: ${dmarcConflict.join('; ')}` };
  const badDmarc = r.dmarc.find((d) => DMARC_FATAL.has(d.result));
  if (badDmarc) return { verdict: 'auth:dmarc-fail', reason: `gate 6: trusted dmarc=${badDmarc.result}` };
  return null;
}

/**
 * Gate 7's first half, on the trusted results alone: their `dkim=pass` results whose `header.d` is
 * exactly `dkimDomain` (lower-case), or the refusal when the trusted results conflict. No pass
 * means no DKIM-Signature of the message can align, whatever the message holds.
 */
export function trustedPasses(r: TrustedResults, dkimDomain: string): DkimAr[] | Refusal {
  if (r.conflicts.length) return { verdict: 'auth:dkim-unaligned', reason: `gate 7: trusted results conflict: ${r.conflicts.join('; ')}` };
  return r.dkim.filter((d) => d.result === 'pass' && d.headerD !== null && d.headerD.toLowerCase() === dkimDomain);
}

/** The trusted dkim results, for a refusal's reason. */
export function trustedDkimSeen(r: TrustedResults): string {
  return r.dkim.map((d) => `dkim=${d.result} header.d=${d.headerD ?? '?'}`).join(', ') || 'no dkim result';
}

/** Header fields the aligned signature must cover (its h= tag, lower-cased). */
const SIGNED_HEADERS = ['from', 'subject', 'date', 'message-id'] as const;

/**
 * Gate 7, from the trusted results: a trusted dkim=pass for exactly the agent domain naming a
 * DKIM-Signature present in the message — by header.b prefix (at least 8 characters, RFC 6008 §3),
 * or, for providers that write no header.b (Yahoo: header.s; Microsoft: header.d only,
 * docs/providers.md), by selector or domain, which local verification must then confirm — that
 * signs From, Subject, Date and Message-ID (what the later gates rely on) and has no l= limit
 * (RFC 6376 §8.2: text may be appended under it). A message may carry several such signatures (a
 * key rotation signs with the old and the new key).
 * @returns the signatures that may stand for the agent, for {@link dkimVerifies}, and the first of
 *   them a trusted result named by header.b (`pinned`; null when none was)
 */
export function alignedSignatures(facts: MessageFacts, r: TrustedResults, agent: AgentConfig): { candidates: DkimSignatureInfo[]; pinned: DkimSignatureInfo | null } | Refusal {
  const passes = trustedPasses(r, agent.dkimDomain);
  if (isRefusal(passes)) return passes;
  const signatures = parseDkimSignatures(facts.fields).filter((s) => s.d === agent.dkimDomain);
  const named = signatures.map((s) => ({ s, how: passes.map((d) => dkimResultNames(d, s)) }));
  const aligned = named.filter((n) => n.how.some((h) => h !== null)).map((n) => n.s);
  const byHeaderB = new Set(named.filter((n) => n.how.includes('header.b')).map((n) => n.s));
  if (aligned.length === 0) {
    const seen = trustedDkimSeen(r);
    // Which half is missing: the signature in the message, or a trusted pass that names it.
    let inMessage: string;
    if (signatures.length === 0) inMessage = `the message holds no DKIM-Signature with d=${agent.dkimDomain}`;
    else if (passes.length === 0) inMessage = `the message holds ${plural(signatures.length, 'DKIM-Signature')} with d=${agent.dkimDomain}`;
    else inMessage = `no trusted pass names the message's ${plural(signatures.length, 'DKIM-Signature')} with d=${agent.dkimDomain} (by header.b or header.s)`;
    return {
      verdict: 'auth:dkim-unaligned',
      reason: `gate 7: no trusted dkim=pass with header.d=${agent.dkimDomain} matching a DKIM-Signature (trusted: ${seen}; ${inMessage})`,
    };
  }
  const problems: string[] = [];
  const copied = copiedSignatures(facts.fields);
  const candidates = aligned.filter((s) => {
    const missing = SIGNED_HEADERS.filter((h) => !s.signedHeaders.includes(h));
    if (copied.has(s.b)) problems.push(`s=${s.s} shares its b= with another DKIM-Signature field that differs from it (one is a copy of the other's signature)`);
    else if (s.bodyLengthLimited) problems.push(`s=${s.s} has an l= body length limit`);
    else if (missing.length) problems.push(`s=${s.s} does not sign ${missing.join(', ')}`);
    return !copied.has(s.b) && !s.bodyLengthLimited && missing.length === 0;
  });
  if (candidates.length === 0) return { verdict: 'auth:dkim-unverified', reason: `gate 7: no usable aligned DKIM-Signature (${problems.join('; ')})` };
  return { candidates, pinned: candidates.find((s) => byHeaderB.has(s)) ?? null };
}

/**
 * Gate 7 without local verification (`mailbox.verify_dkim = false`): only a trusted result that
 * names the signature by header.b says which signature passed.
 */
export const UNPINNED_WITHOUT_VERIFICATION: Refusal = {
  verdict: 'auth:dkim-unverified',
  reason: "gate 7: the provider's dkim=pass names no header.b, so only local verification can tell which signature passed, and mailbox.verify_dkim is false",
};

/**
 * Gate 7, locally (RFC 6376 §6): one of the candidate signatures verifies with mailauth, keys and
 * x= expiry judged as of `receivedAt` (when the mailbox received the message; now when unknown).
 * Only the candidates' keys are looked up. Only a DNS failure for every candidate is temporary; a
 * missing key, a bad signature or a verification over its time budget is final.
 * @param budget the worker's time budget and its clock (default: offload.ts's), for a test to choose
 * @returns the candidate that verified, or the refusal
 */
export async function dkimVerifies(
  raw: Buffer,
  candidates: readonly DkimSignatureInfo[],
  agent: AgentConfig,
  resolver: DnsResolver,
  receivedAt: number | null,
  budget: { budgetMs?: number; timer?: BudgetTimer } = {},
): Promise<Refusal | DkimSignatureInfo> {
  // Only the candidates' keys are looked up: no other signature costs a DNS query or an RSA
  // operation (uplink/dkim.ts `verifyDkimLocally`; docs/architecture.md, gate 7).
  const local = await verifyDkimLocally(raw, candidates, resolver, { ...budget, ...(receivedAt ? { now: new Date(receivedAt) } : {}) });
  const passed = candidates.find((s) => local.some((l) => l.b === s.b && l.status === 'pass'));
  if (passed) return passed;
  const mine = candidates.map((s) => local.find((x) => x.b === s.b));
  const over = mine.find((l) => l?.overBudget);
  if (over) return { verdict: 'auth:dkim-unverified', reason: `gate 7: the message was not verified: ${over.info}; no signature was judged`, temporary: false };
  const seen = candidates.map((s, i) => `s=${s.s}: ${mine[i] ? `${mine[i].status} (${mine[i].info})` : 'no result'}`).join('; ');
  const temporary = mine.every((l) => l?.status === 'temperror');
  return { verdict: 'auth:dkim-unverified', reason: `gate 7: local DKIM verification of d=${agent.dkimDomain} did not pass (${seen})`, temporary };
}

/** Gate 8: the tagged task exists and belongs to the agent whose tag the subject carries. */
export function unknownTask(tag: TaskTag): Refusal {
  return { verdict: 'unknown-task', reason: `gate 8: no task ${tag.taskId} for agent ${tag.agent.name}` };
}

/**
 * Gate 8, the Date window (RFC 5322 §3.6.1): the reply's Date lies within `skewMs` before the
 * current turn's dispatch and `skewMs` after now (all in ms since the epoch).
 */
export function dateInWindow(date: string | null, w: { dispatchedAt: number; now: number; skewMs: number }): Refusal | null {
  const at = date === null ? Number.NaN : Date.parse(date);
  if (Number.isNaN(at)) return { verdict: 'auth:date-window', reason: `gate 8: the Date header ${JSON.stringify(date)} cannot be parsed` };
  if (at < w.dispatchedAt - w.skewMs) {
    return { verdict: 'auth:date-window', reason: `gate 8: Date ${new Date(at).toISOString()} is before the dispatch of this turn (${new Date(w.dispatchedAt).toISOString()})` };
  }
  if (at > w.now + w.skewMs) return { verdict: 'auth:date-window', reason: `gate 8: Date ${new Date(at).toISOString()} is in the future` };
  return null;
}

/**
 * Gate 8a: a reply whose Message-ID was already applied (or kept late) for this task is a
 * replay. It comes after authentication, so a forged mail cannot pre-empt a genuine reply by
 * claiming its Message-ID.
 */
export function replayedMessageId(messageId: string): Refusal {
  return { verdict: 'duplicate', reason: `gate 8a: Message-ID ${messageId} was already applied to this task` };
}

/**
 * Gate 9: the body was read (else `unparsed:<cap>`, naming the cap that kept it from being read:
 * uplink/reply-format.ts `UnparsedCap`), its reply block holds one `reply_token:` line
 * (docs/architecture.md, "The reply format") and it is the task's live token, compared in constant
 * time by `matches`.
 */
export function tokenHolds(reply: ParsedReply, matches: (presented: string) => boolean): Refusal | null {
  if (reply.tokenProblem === 'unparsed') {
    return { verdict: `unparsed:${reply.unparsedBy ?? 'error'}`, reason: `gate 9: the body was not read: ${reply.unparsed ?? 'over the parse budget'}` };
  }
  if (reply.token === null) {
    const why =
      reply.tokenProblem === 'several'
        ? 'more than one reply_token line'
        : reply.tokenProblem === 'only-in-quote'
          ? 'the reply_token appears only in quoted text'
          : 'no reply_token line in the reply block';
    return { verdict: 'no-token', reason: `gate 9: ${why}` };
  }
  if (!matches(reply.token)) return { verdict: 'bad-token', reason: "gate 9: the reply_token is not the task's live token (used, revoked or wrong)" };
  return null;
}

/**
 * Gate 10: the task awaits the agent (SUBMITTED or WORKING). A task that FAILED by its deadline
 * or its dispatch keeps an authenticated reply as `late` (shown, not applied); any other closed
 * task refuses it.
 */
export function taskOpen(state: string, failedBy: string | null): Refusal | 'open' | 'late' {
  if (state === 'SUBMITTED' || state === 'WORKING') return 'open';
  if (state === 'FAILED' && (failedBy === 'deadline' || failedBy === 'dispatch')) return 'late';
  return { verdict: 'task-closed', reason: `gate 10: the task is ${state.toLowerCase()}` };
}

export type { ReplyStatusWord };
const STATUSES: ReadonlySet<string> = new Set(REPLY_STATUS_WORDS);
/** `done, input-required, failed, rejected or working`, for the refusal's reason. */
const EXPECTED = REPLY_STATUS_WORDS.join(', ').replace(/, (?=[^,]*$)/, ' or ');

/** Gate 11: one status line with a known word ({@link REPLY_STATUS_WORDS}; docs/architecture.md, "The reply format"). */
export function replyStatus(reply: ParsedReply): ReplyStatusWord | Refusal {
  if (reply.status === null || !STATUSES.has(reply.status)) {
    const why = reply.statusProblem === 'several' ? 'more than one status line' : reply.status === null ? 'no status line' : `status "${reply.status}"`;
    return { verdict: 'bad-status', reason: `gate 11: ${why}; expected ${EXPECTED}` };
  }
  return reply.status as ReplyStatusWord;
}
