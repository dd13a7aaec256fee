/**
 * The border rule (FACTS.md, "Mail authentication"): only Authentication-Results stamped by our
 * own provider, *above* the hop where the provider's MX accepted the message from the outside,
 * are trusted. Everything at or below that hop was written by whoever sent the message, forged
 * provider lines included. When the hop or the results are missing we fail closed.
 *
 * Each hop prepends its Received field (RFC 5321 §4.4) and the receiving MTA prepends its
 * Authentication-Results (RFC 8601 §5), so "above" means a smaller field index.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { FASTMAIL_HOST_PATTERN } from '../config/config.js';
import { parseAuthResults, type AuthResult } from './auth-results.js';
import type { HeaderField } from './raw-headers.js';

/** Who our provider is. Both patterns must match a whole host name, case-insensitively. */
export interface ProviderProfile {
  /** authserv-ids whose Authentication-Results we trust (RFC 8601 §2.5), e.g. `mx1.messagingengine.com`. */
  authservId: RegExp;
  /** The provider's MX hosts, as written in Received `by` clauses. */
  borderHost: RegExp;
}

/** Fastmail: per-host MX names such as `mx1.messagingengine.com`, `phl-mx-04.messagingengine.com`. */
export const FASTMAIL_PROFILE: ProviderProfile = {
  authservId: new RegExp(`^${FASTMAIL_HOST_PATTERN}$`, 'i'),
  borderHost: new RegExp(`^${FASTMAIL_HOST_PATTERN}$`, 'i'),
};

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
   * parsed. Callers treat any conflict as a failure (FACTS.md: "treat conflicts as failure").
   */
  conflicts: string[];
}

export type TrustOutcome =
  | { ok: false; verdict: 'auth:no-border' | 'auth:no-trusted-results'; reason: string }
  | {
      ok: true;
      /** Index of the border Received field; only fields with a smaller index were trusted. */
      border: number;
      results: TrustedResults;
      reason: string;
    };

/** The parts of a Received field the border rule reads. */
export interface ReceivedHop {
  /** The host after `from`, lower-cased, trailing dot removed (often the sender's HELO name). */
  from: string | null;
  /** The host after `by`, lower-cased, trailing dot removed. */
  by: string | null;
  /** Every IP address written in the `from` clause: the host itself when it is a literal, and its comments. */
  fromIps: string[];
}

interface Word {
  text: string;
  comments: string[];
}

/** Splits a Received value into words (comments attached to the word before them), up to the `;` before the date. */
function receivedWords(value: string): Word[] {
  const words: Word[] = [];
  let i = 0;
  const s = value;
  while (i < s.length) {
    const c = s[i] ?? '';
    if (c === ';') break;
    if (c === ' ' || c === '\t' || c === '\r' || c === '\n') {
      i++;
    } else if (c === '(') {
      let depth = 0;
      const from = i;
      while (i < s.length) {
        const d = s[i++];
        if (d === '\\') i++;
        else if (d === '(') depth++;
        else if (d === ')' && --depth === 0) break;
      }
      const text = s.slice(from + 1, depth === 0 ? i - 1 : i);
      words[words.length - 1]?.comments.push(text);
    } else {
      const from = i;
      let quoted = false;
      while (i < s.length) {
        const d = s[i] ?? '';
        if (quoted) {
          if (d === '\\') i++;
          else if (d === '"') quoted = false;
        } else if (d === '"') quoted = true;
        else if (d === ' ' || d === '\t' || d === '\r' || d === '\n' || d === '(' || d === ';') break;
        i++;
      }
      words.push({ text: s.slice(from, i), comments: [] });
    }
  }
  return words;
}

function hostOf(word: Word | undefined): string | null {
  if (!word) return null;
  const h = word.text.toLowerCase().replace(/\.$/, '');
  return h === '' || h === 'from' || h === 'by' ? null : h;
}

/**
 * IP addresses in a piece of Received text: `[1.2.3.4]`, `[IPv6:…]`, or a bare address word. A
 * bracket's content stops at the next `[` too, so each attempt ends where the next one starts: a
 * run of `[` without `]` is linear (it was quadratic).
 */
function ipsIn(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/\[(?:ipv6:)?([^[\]\s]+)\]/gi)) {
    if (m[1] && (isIPv4(m[1]) || isIPv6(m[1]))) out.push(m[1].toLowerCase());
  }
  for (const w of text.split(/[\s,;=()]+/)) {
    const bare = w.replace(/\.$/, '');
    if (isIPv4(bare) || isIPv6(bare)) out.push(bare.toLowerCase());
  }
  return out;
}

/**
 * Reads the `from` and `by` clauses of a Received value (RFC 5321 §4.4 Stamp, RFC 5322 §3.6.7).
 * Comments are skipped for the host names but searched for the peer's IP in the `from` clause
 * (`from helo.example (rdns.example [192.0.2.1])`). Never throws.
 */
export function parseReceived(value: string): ReceivedHop {
  try {
    const words = receivedWords(String(value));
    const fromAt = words.findIndex((w) => w.text.toLowerCase() === 'from');
    const byAt = words.findIndex((w, i) => (fromAt < 0 || i !== fromAt + 1) && w.text.toLowerCase() === 'by');
    const fromWord = fromAt >= 0 && (byAt < 0 || fromAt < byAt) ? words[fromAt + 1] : undefined;
    const from = hostOf(fromWord);
    const fromIps = fromWord && from !== null ? [...ipsIn(fromWord.text), ...fromWord.comments.flatMap(ipsIn)] : [];
    return { from, by: byAt >= 0 ? hostOf(words[byAt + 1]) : null, fromIps: [...new Set(fromIps)] };
  } catch {
    return { from: null, by: null, fromIps: [] };
  }
}

/**
 * Addresses that never reach a public MX from the Internet: loopback, RFC 1918, link-local,
 * shared (RFC 6598), IPv6 ULA (RFC 4193) and link-local, and their IPv4-mapped forms.
 */
export function isInternalIp(ip: string): boolean {
  let v4 = isIPv4(ip) ? ip : null;
  if (!v4 && isIPv6(ip)) {
    const lower = ip.toLowerCase();
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower)?.[1];
    if (mapped) v4 = mapped;
    else return lower === '::1' || /^f[cd][0-9a-f]{0,2}:/.test(lower) || /^fe[89ab][0-9a-f]?:/.test(lower);
  }
  if (!v4) return false;
  const [a = -1, b = -1] = v4.split('.').map(Number);
  return a === 127 || a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254) || (a === 100 && b >= 64 && b <= 127);
}

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

/**
 * Finds the border and merges the trusted Authentication-Results (FACTS.md: Fastmail writes
 * several A-R fields per message; merge them and treat conflicts as failure).
 *
 * The border is the topmost Received field whose `by` host matches `profile.borderHost` and whose
 * peer is outside the provider (see `peerInside`). Trusted fields are the Authentication-Results
 * above it whose authserv-id matches `profile.authservId` as a whole (so `evilmessagingengine.com`
 * and `mx1.messagingengine.com.evil.test` do not). A trusted-looking field that cannot be parsed is
 * reported as a conflict. Never throws.
 */
export function findTrustedResults(fields: readonly HeaderField[], profile: ProviderProfile): TrustOutcome {
  const hops = fields.filter((f) => f.lname === 'received').map((f) => ({ index: f.index, hop: parseReceived(f.value) }));
  const border = hops.find(({ hop }) => hop.by !== null && matchesWhole(profile.borderHost, hop.by) && !peerInside(hop, profile));
  if (!border) {
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
  const results: TrustedResults = { dkim: [], dmarc: [], spf: [], conflicts: [] };
  const trusted: string[] = [];
  const others: string[] = [];
  const dkimSeen: { key: string; label: string; result: string; where: string }[] = [];
  const dkimKeys = new Set<string>();
  const dmarcKeys = new Set<string>();
  const dmarcSeen: typeof dkimSeen = [];
  const spfSeen: typeof dkimSeen = [];
  for (const f of fields) {
    if (f.lname !== 'authentication-results' || f.index >= border.index) continue;
    const where = `Authentication-Results #${f.index}`;
    const parsed = parseAuthResults(f.value);
    if (!parsed) {
      const id = leadingId(f.value);
      if (id !== null && matchesWhole(profile.authservId, id)) {
        trusted.push(`#${f.index} (${id}, unparseable)`);
        results.conflicts.push(`${where} by ${id} could not be parsed`);
      } else others.push(`#${f.index} (${id ?? 'unparseable'})`);
      continue;
    }
    if (!matchesWhole(profile.authservId, parsed.authservId)) {
      others.push(`#${f.index} (${parsed.authservId})`);
      continue;
    }
    trusted.push(`#${f.index} (${parsed.authservId})`);
    for (const r of parsed.results) {
      if (r.method === 'dkim') {
        const entry: DkimAr = {
          result: r.result,
          headerD: normDomain(oneProp(r, 'header', 'd', where, results.conflicts)),
          headerI: oneProp(r, 'header', 'i', where, results.conflicts),
          headerB: oneProp(r, 'header', 'b', where, results.conflicts),
          headerS: oneProp(r, 'header', 's', where, results.conflicts),
        };
        // One provider field may list a result per DKIM-Signature, and a sender may add thousands:
        // duplicates are found by key (a scan per entry was quadratic).
        const dkimKey = JSON.stringify(entry);
        if (!dkimKeys.has(dkimKey)) (dkimKeys.add(dkimKey), results.dkim.push(entry));
        const label = `header.d=${entry.headerD ?? '(none)'} header.b=${entry.headerB ?? '(none)'}`;
        dkimSeen.push({ key: `${entry.headerD}|${entry.headerB}`, label, result: r.result, where });
      } else if (r.method === 'dmarc') {
        const headerFrom = normDomain(oneProp(r, 'header', 'from', where, results.conflicts));
        const dmarcKey = `${r.result}|${headerFrom}`;
        if (!dmarcKeys.has(dmarcKey)) (dmarcKeys.add(dmarcKey), results.dmarc.push({ result: r.result, headerFrom }));
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
    return {
      ok: false,
      verdict: 'auth:no-trusted-results',
      reason: `${borderText}; no Authentication-Results above it with an authserv-id matching ${profile.authservId}${others.length ? ` (above it, not trusted: ${others.join(', ')})` : ''}`,
    };
  }
  disagreements('dkim', dkimSeen, results.conflicts);
  disagreements('dmarc', dmarcSeen, results.conflicts);
  disagreements('spf', spfSeen, results.conflicts);
  const conflictText = results.conflicts.length ? `; ${results.conflicts.length} conflict(s): ${results.conflicts.join('; ')}` : '';
  return { ok: true, border: border.index, results, reason: `${borderText}; trusted Authentication-Results ${trusted.join(', ')}${conflictText}` };
}
