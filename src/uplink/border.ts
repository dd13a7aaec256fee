/**
 * The border rule (docs/architecture.md, "The gates", gate 5): only Authentication-Results
 * stamped by our own provider at the hop where its MX accepted the message from the outside are
 * trusted. Everything the sender wrote, forged provider lines included, sits below that hop's
 * stamp. When the hop or the results are missing we fail closed.
 *
 * Each hop prepends its Received field (RFC 5321 §4.4) and the receiving MTA prepends its
 * Authentication-Results (RFC 8601 §5), so "above" means a smaller field index. Some providers
 * write their results just under their own Received, in the same stamp (Gmail, iCloud, Yahoo), or
 * without an authserv-id (Microsoft): see src/uplink/providers.ts and docs/providers.md.
 */
import { maxOf } from '../extremes.js';
import { inertReason } from '../inert-text.js';
import { plural } from '../plural.js';
import { parseAuthResults, parseIdlessAuthResults, type AuthResult, type ParsedAuthResults } from './auth-results.js';
import { FASTMAIL_HOST_PATTERN, PRESETS, type ProviderName, type ResultsPlacement } from './providers.js';
import type { HeaderField } from './raw-headers.js';
import { isInternalIp, parseReceived, type ReceivedHop } from './received.js';

export { isInternalIp, parseReceived, type ReceivedHop } from './received.js';

/** Who our provider is. Every pattern must match a whole host name (or authserv-id), case-insensitively. */
export interface ProviderProfile {
  /** authserv-ids whose Authentication-Results we trust (RFC 8601 §2.5), e.g. `mx1.messagingengine.com`. */
  authservId: RegExp;
  /** The provider's MX hosts, as written in Received `by` clauses. */
  borderHost: RegExp;
  /** The preset this profile came from, for messages (absent: patterns given by hand). */
  name?: ProviderName;
  /** Where the border MTA writes its results relative to its own Received; default `above`. */
  placement?: ResultsPlacement;
  /**
   * `below` only: the provider's stamp under its Received ends with the first A-R whose
   * authserv-id matches this (default `authservId`). Nothing after it is the provider's.
   */
  stampEndId?: RegExp;
  /** Per-method authserv-ids (iCloud): a field counts only for the method its id names. */
  methodIds?: { dkim: RegExp; dmarc: RegExp; spf: RegExp };
  /**
   * The provider writes A-R without an authserv-id (Microsoft): trusted are the id-less fields
   * written by the border hop itself, between the border Received and the next Received above.
   */
  idless?: boolean;
}

/** Fastmail: per-host MX names such as `mx1.messagingengine.com`, `phl-mx-04.messagingengine.com`. */
export const FASTMAIL_PROFILE: ProviderProfile = {
  name: 'fastmail',
  authservId: new RegExp(`^${FASTMAIL_HOST_PATTERN}$`, 'i'),
  borderHost: new RegExp(`^${FASTMAIL_HOST_PATTERN}$`, 'i'),
};

const anchored = (source: string): RegExp => new RegExp(`^(?:${source})$`, 'i');

/**
 * The profile of a preset, with explicit patterns overriding it: `authservId` replaces the
 * preset's whole way of recognising its results (per-method ids, id-less position) by an
 * authserv-id pattern, `borderHost` replaces its border hosts.
 * @throws Error for `self-hosted` without both patterns (the config loader says which key to set).
 */
export function profileOf(name: ProviderName, o: { authservId?: RegExp; borderHost?: RegExp } = {}): ProviderProfile {
  const p = PRESETS[name];
  const borderHost = o.borderHost ?? (p.borderHost ? anchored(p.borderHost) : null);
  if (!borderHost) throw new Error(`provider ${name} needs border_host`);
  if (o.authservId) {
    return { name, authservId: o.authservId, borderHost, placement: p.placement, ...(p.placement === 'below' ? { stampEndId: o.authservId } : {}) };
  }
  if (p.idless) return { name, authservId: /^$/, borderHost, placement: 'above', idless: true };
  if (!p.authservId) throw new Error(`provider ${name} needs authserv_id`);
  return {
    name,
    authservId: anchored(p.authservId),
    borderHost,
    placement: p.placement,
    ...(p.stampEndId ? { stampEndId: anchored(p.stampEndId) } : {}),
    ...(p.methodIds ? { methodIds: { dkim: anchored(p.methodIds.dkim), dmarc: anchored(p.methodIds.dmarc), spf: anchored(p.methodIds.spf) } } : {}),
  };
}

export interface DkimAr {
  /** Lower-cased result: `pass`, `fail`, `neutral`, … */
  result: string;
  /** `header.d`, lower-cased, trailing dot removed. */
  headerD: string | null;
  headerI: string | null;
  /** `header.b`: the first characters of the signature's b= (RFC 6008), as written. */
  headerB: string | null;
  headerS: string | null;
}

export interface TrustedResults {
  dkim: DkimAr[];
  /** `headerFrom` is `header.from`, lower-cased. */
  dmarc: { result: string; headerFrom: string | null }[];
  spf: { result: string }[];
  /**
   * Human-readable disagreements among the trusted fields, and trusted fields that could not be
   * parsed. Callers treat any conflict as a failure (fail closed).
   */
  conflicts: string[];
}

/**
 * What the fields given cannot tell: they are the top of a header block that runs on
 * ({@link findTrustedResultsInPrefix}), and the border, or the end of a `below` stamp, may lie in
 * the fields not given.
 */
export interface Undecided {
  ok: 'undecided';
  reason: string;
}

export type TrustOutcome =
  | { ok: false; verdict: 'auth:no-border' | 'auth:no-trusted-results'; reason: string; border?: number }
  | {
      ok: true;
      /** Index of the border Received field. */
      border: number;
      results: TrustedResults;
      /** Indexes of the Authentication-Results fields that were trusted. */
      trusted: number[];
      reason: string;
    };

const wholeMatchers = new WeakMap<RegExp, RegExp>();

/** True when `re` matches all of `s` (anchoring enforced here whatever the pattern says; no g/y state). */
export function matchesWhole(re: RegExp, s: string): boolean {
  let whole = wholeMatchers.get(re);
  if (!whole) {
    whole = new RegExp(`^(?:${re.source})$`, re.flags.replace(/[gy]/g, ''));
    wholeMatchers.set(re, whole);
  }
  return whole.test(s);
}

/**
 * Whether the peer of a hop is inside the provider. When the hop names IP addresses (the MTA
 * writes the one it saw), the peer is inside only if every one of them is internal: a sender's
 * HELO is its own claim (RFC 5321 §4.4), so `from mx1.messagingengine.com (evil [192.0.2.9])` is
 * outside. Real Fastmail mail has internal hops like `from mailmx.phl.internal (localhost
 * [127.0.0.1]) by phl-mx-04.messagingengine.com` above the true border. Without any IP, the peer is
 * inside when its name is a provider host. In doubt the hop counts as the border, which only
 * moves the border up (trusting less).
 */
function peerInside(hop: ReceivedHop, profile: ProviderProfile): boolean {
  if (hop.fromIps.length > 0) return hop.fromIps.every(isInternalIp);
  return hop.from !== null && matchesWhole(profile.borderHost, hop.from);
}

function describeHop(index: number, hop: ReceivedHop): string {
  const ips = hop.fromIps.length ? ` [${hop.fromIps.join(', ')}]` : '';
  return `Received #${index} by ${hop.by ?? '(none)'} from ${hop.from ?? '(none)'}${ips}`;
}

/** The authserv-id at the start of an A-R value we could not parse, for the conflict message. */
function leadingId(value: string): string | null {
  return /^\s*(?:\([^)]*\)\s*)*"?([^\s;"()]+)/.exec(value)?.[1] ?? null;
}

function props(r: AuthResult, ptype: string, property: string): string[] {
  return [...new Set(r.props.filter((p) => p.ptype === ptype && p.property === property).map((p) => p.value))];
}

/** One value of `ptype.property`; two different values in one result are a conflict. */
function oneProp(r: AuthResult, ptype: string, property: string, where: string, conflicts: string[]): string | null {
  const values = props(r, ptype, property);
  if (values.length > 1) conflicts.push(`${where}: ${r.method} has ${values.length} different ${ptype}.${property} values`);
  return values[0] ?? null;
}

function normDomain(d: string | null): string | null {
  return d === null ? null : d.toLowerCase().replace(/\.$/, '');
}

/** Pushes a conflict for every key whose results differ across the trusted fields. */
function disagreements(method: string, entries: { key: string; label: string; result: string; where: string }[], conflicts: string[]): void {
  const byKey = new Map<string, typeof entries>();
  for (const e of entries) {
    const group = byKey.get(e.key);
    if (group) group.push(e);
    else byKey.set(e.key, [e]);
  }
  for (const group of byKey.values()) {
    if (new Set(group.map((e) => e.result)).size < 2) continue;
    const first = group[0];
    const seen = group.map((e) => `${e.result} (${e.where})`).join(', ');
    conflicts.push(`${method}${first?.label ? ` for ${first.label}` : ''} disagrees: ${seen}`);
  }
}

/** The domain of an `header.i` value (`@agent.example`, `agent@agent.example`), lower-cased. */
function domainOfIdentity(i: string | null): string | null {
  if (i === null) return null;
  const d = i.slice(i.lastIndexOf('@') + 1);
  return d === '' ? null : d;
}

/** The Received hop at which the provider accepted the message from the outside, or null. */
export function findBorder(fields: readonly HeaderField[], profile: ProviderProfile): { index: number; hop: ReceivedHop } | null {
  for (const f of fields) {
    if (f.lname !== 'received') continue;
    const hop = parseReceived(f.value);
    if (hop.by !== null && matchesWhole(profile.borderHost, hop.by) && !peerInside(hop, profile)) return { index: f.index, hop };
  }
  return null;
}

/** Upper bound on the fields of a provider's stamp under its Received (iCloud writes about a dozen). */
const MAX_STAMP_FIELDS = 32;

/** The authserv-id of an A-R value, strictly parsed or, failing that, its leading word. */
function idOf(value: string): string | null {
  return parseAuthResults(value)?.authservId ?? leadingId(value);
}

/**
 * The fields the provider itself wrote with its results at the border (see ProviderProfile):
 * above the border; for `idless`, only between the border and the next Received above it; for
 * `below`, from the border down to the first A-R whose id matches `stampEndId`.
 * @returns the window, or a reason when a `below` stamp has no end field in reach.
 */
function stampWindow(fields: readonly HeaderField[], border: number, profile: ProviderProfile, more: boolean): { from: number; to: number } | { missing: string } | Undecided {
  if ((profile.placement ?? 'above') === 'above') {
    const receivedAbove = profile.idless ? fields.filter((f) => f.lname === 'received' && f.index < border).map((f) => f.index) : [];
    return { from: receivedAbove.length ? maxOf(receivedAbove, 0) + 1 : 0, to: border - 1 };
  }
  const end = profile.stampEndId ?? profile.authservId;
  for (const f of fields) {
    if (f.index <= border || f.lname !== 'authentication-results') continue;
    if (f.index > border + MAX_STAMP_FIELDS) break;
    const id = idOf(f.value);
    if (id !== null && matchesWhole(end, id)) return { from: border + 1, to: f.index };
  }
  // The fields not given may hold the end field, while they are within reach of the border.
  if (more && (fields.at(-1)?.index ?? -1) < border + MAX_STAMP_FIELDS) return { ok: 'undecided', reason: `the end of the provider's stamp under the border lies beyond the fields read` };
  return { missing: `no Authentication-Results by an authserv-id matching ${end} in the provider's stamp under the border (the ${MAX_STAMP_FIELDS} fields below it)` };
}

/**
 * The id test of gate 5 on one Authentication-Results field, wherever it lies: which methods'
 * results the border rule takes from it when it is in the provider's stamp at the border
 * (`['*']` every method; iCloud's per-method ids name some), none when it is not the provider's (another
 * authserv-id, none, or — `idless` — one, or off the id-less grammar). A field whose id matches but
 * that cannot be parsed has `parsed` null (a conflict to {@link findTrustedResults}). Never throws.
 */
export function stampFieldTrust(value: string, profile: ProviderProfile): { parsed: ParsedAuthResults | null; id: string | null; allowed: string[] } {
  if (profile.idless) {
    const parsed = parseIdlessAuthResults(value);
    return parsed ? { parsed, id: '', allowed: ['*'] } : { parsed, id: idOf(value), allowed: [] };
  }
  const parsed = parseAuthResults(value);
  const id = parsed?.authservId ?? leadingId(value);
  const allowed = id === null ? [] : profile.methodIds ? Object.entries(profile.methodIds).filter(([, re]) => matchesWhole(re, id)).map(([m]) => m) : matchesWhole(profile.authservId, id) ? ['*'] : [];
  return { parsed, id, allowed };
}

/**
 * Finds the border and merges the trusted Authentication-Results (Fastmail writes several A-R
 * fields per message; merge them and treat conflicts as failure).
 *
 * The border is the topmost Received field whose `by` host matches `profile.borderHost` and whose
 * peer is outside the provider (see `peerInside`). Trusted fields are the Authentication-Results
 * in the provider's stamp at the border (`stampWindow`) whose authserv-id matches
 * `profile.authservId` as a whole (so `evilmessagingengine.com` and
 * `mx1.messagingengine.com.evil.test` do not), or per method `profile.methodIds`, or — `idless` —
 * that carry no authserv-id (read with the tolerant `parseIdlessAuthResults`). ARC-* and
 * `*-Original` fields are other fields and never read. A trusted-looking field that cannot be
 * parsed is reported as a conflict. A `dkim` result without `header.d` takes the domain of its
 * `header.i` (Gmail and Yahoo write only `header.i`). The reason quotes Received words and
 * authserv-ids as written, made inert (src/inert-text.ts). Never throws.
 */
export function findTrustedResults(fields: readonly HeaderField[], profile: ProviderProfile): TrustOutcome {
  return inertReason(trustOf(fields, profile, false)) as TrustOutcome;
}

/**
 * {@link findTrustedResults} on the top fields of a header block that runs on past them (the
 * prefix a check reads first: raw-headers.ts `headerPrefixFields`; docs/architecture.md, "The
 * header stage"): the same rule, and the same outcome the whole block gets whenever the fields
 * given decide it — the border is the topmost matching Received, and the provider's stamp lies
 * above it or, for `below`, within {@link MAX_STAMP_FIELDS} fields under it. Undecided when the
 * border, or the end of a `below` stamp, may lie in the fields not given. Never throws.
 */
export function findTrustedResultsInPrefix(fields: readonly HeaderField[], profile: ProviderProfile): TrustOutcome | Undecided {
  return inertReason(trustOf(fields, profile, true));
}

/** The border rule of both: `more` says fields may follow those given. */
function trustOf(fields: readonly HeaderField[], profile: ProviderProfile, more: boolean): TrustOutcome | Undecided {
  const border = findBorder(fields, profile);
  if (!border && more) return { ok: 'undecided', reason: 'no border among the fields read' };
  if (!border) {
    const hops = fields.filter((f) => f.lname === 'received').map((f) => ({ index: f.index, hop: parseReceived(f.value) }));
    const seen = hops.slice(0, 8).map(({ index, hop }) => describeHop(index, hop));
    return {
      ok: false,
      verdict: 'auth:no-border',
      reason:
        hops.length === 0
          ? 'no Received field: cannot tell where the provider accepted the message'
          : `no Received by a host matching ${profile.borderHost} from an outside host; seen: ${seen.join('; ')}${hops.length > 8 ? '; …' : ''}`,
    };
  }
  const borderText = `border is ${describeHop(border.index, border.hop)}`;
  const window = stampWindow(fields, border.index, profile, more);
  if ('ok' in window) return window;
  if ('missing' in window) return { ok: false, verdict: 'auth:no-trusted-results', reason: `${borderText}; ${window.missing}`, border: border.index };
  const results: TrustedResults = { dkim: [], dmarc: [], spf: [], conflicts: [] };
  const trusted: string[] = [];
  const trustedIdx: number[] = [];
  const others: string[] = [];
  const dkimSeen: { key: string; label: string; result: string; where: string }[] = [];
  const dkimKeys = new Set<string>();
  const dmarcKeys = new Set<string>();
  const dmarcSeen: typeof dkimSeen = [];
  const spfSeen: typeof dkimSeen = [];
  const expected = profile.idless ? 'no authserv-id (written by the border hop)' : `an authserv-id matching ${profile.methodIds ? Object.values(profile.methodIds).join(' / ') : profile.authservId}`;
  for (const f of fields) {
    if (f.lname !== 'authentication-results' || f.index < window.from || f.index > window.to) continue;
    const where = `Authentication-Results #${f.index}`;
    const { parsed, id, allowed } = stampFieldTrust(f.value, profile);
    if (allowed.length === 0) {
      others.push(`#${f.index} (${id ?? 'unparseable'})`);
      continue;
    }
    if (!parsed) {
      trusted.push(`#${f.index} (${id}, unparseable)`);
      trustedIdx.push(f.index);
      results.conflicts.push(`${where} by ${id} could not be parsed`);
      continue;
    }
    const methods: ReadonlySet<string> | null = allowed.includes('*') ? null : new Set(allowed); // null: every method
    trusted.push(`#${f.index} (${parsed.authservId || 'no authserv-id'})`);
    trustedIdx.push(f.index);
    for (const r of parsed.results) {
      if (methods && !methods.has(r.method)) continue;
      if (r.method === 'dkim') {
        const headerI = oneProp(r, 'header', 'i', where, results.conflicts);
        const entry: DkimAr = {
          result: r.result,
          headerD: normDomain(oneProp(r, 'header', 'd', where, results.conflicts) ?? domainOfIdentity(headerI)),
          headerI,
          headerB: oneProp(r, 'header', 'b', where, results.conflicts),
          headerS: oneProp(r, 'header', 's', where, results.conflicts),
        };
        // One provider field may list a result per DKIM-Signature, and a sender may add thousands:
        // duplicates are found by key (a scan per entry was quadratic).
        const dkimKey = JSON.stringify(entry);
        if (!dkimKeys.has(dkimKey)) {
          dkimKeys.add(dkimKey);
          results.dkim.push(entry);
        }
        const label = `header.d=${entry.headerD ?? '(none)'} header.b=${entry.headerB ?? '(none)'}`;
        dkimSeen.push({ key: `${entry.headerD}|${entry.headerB ?? `s=${entry.headerS}`}`, label, result: r.result, where });
      } else if (r.method === 'dmarc') {
        const headerFrom = normDomain(oneProp(r, 'header', 'from', where, results.conflicts));
        const dmarcKey = `${r.result}|${headerFrom}`;
        if (!dmarcKeys.has(dmarcKey)) {
          dmarcKeys.add(dmarcKey);
          results.dmarc.push({ result: r.result, headerFrom });
        }
        dmarcSeen.push({ key: '', label: '', result: r.result, where });
      } else if (r.method === 'spf') {
        const mailfrom = oneProp(r, 'smtp', 'mailfrom', where, results.conflicts);
        const helo = oneProp(r, 'smtp', 'helo', where, results.conflicts);
        if (!results.spf.some((s) => s.result === r.result)) results.spf.push({ result: r.result });
        const label = mailfrom !== null ? `smtp.mailfrom=${mailfrom}` : helo !== null ? `smtp.helo=${helo}` : '';
        spfSeen.push({ key: `${mailfrom?.toLowerCase()}|${helo?.toLowerCase()}`, label, result: r.result, where });
      }
    }
  }
  if (trusted.length === 0) {
    const place = profile.idless ? 'between it and the Received above it' : (profile.placement ?? 'above') === 'below' ? "in the provider's stamp under it" : 'above it';
    return {
      ok: false,
      verdict: 'auth:no-trusted-results',
      reason: `${borderText}; no Authentication-Results ${place} with ${expected}${others.length ? ` (there, not trusted: ${others.join(', ')})` : ''}`,
      border: border.index,
    };
  }
  disagreements('dkim', dkimSeen, results.conflicts);
  disagreements('dmarc', dmarcSeen, results.conflicts);
  disagreements('spf', spfSeen, results.conflicts);
  const conflictText = results.conflicts.length ? `; ${plural(results.conflicts.length, 'conflict')}: ${results.conflicts.join('; ')}` : '';
  return { ok: true, border: border.index, results, trusted: trustedIdx, reason: `${borderText}; trusted Authentication-Results ${trusted.join(', ')}${conflictText}` };
}

/**
 * How a trusted `dkim` result names a DKIM-Signature (both already of the agent's domain):
 * `header.b` when its first ≥ 8 characters start the signature's b= (RFC 6008 §3); `header.s`
 * when it gives only the selector (Yahoo); `header.d` when it gives only the domain (Microsoft).
 * Only `header.b` pins one signature; the weaker two need local verification to pick it.
 * @returns null when the result names another signature
 */
export function dkimResultNames(d: DkimAr, sig: { s: string; b: string }): 'header.b' | 'header.s' | 'header.d' | null {
  if (d.headerB !== null) return d.headerB.length >= 8 && sig.b.startsWith(d.headerB) ? 'header.b' : null;
  if (d.headerS !== null) return d.headerS.toLowerCase() === sig.s.toLowerCase() ? 'header.s' : null;
  return 'header.d';
}
