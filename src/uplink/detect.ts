/**
 * Provider detection from one real mail: which preset recognises the trusted
 * Authentication-Results of a message the user received from outside, or — for a self-hosted MTA
 * — the exact `authserv_id` / `border_host` patterns that do, and what was found and ignored.
 * Pure: the CLI (src/cli/provider.ts) and `doctor` read the message and print the outcome.
 */
import { findBorder, findTrustedResults, isInternalIp, parseReceived, profileOf, type ProviderProfile, type TrustedResults } from './border.js';
import { parseAuthResults, parseIdlessAuthResults } from './auth-results.js';
import { PRESETS, type ProviderName } from './providers.js';
import { parseHeaderBlock, splitMessage, type HeaderField } from './raw-headers.js';

export interface Detection {
  /** The preset whose rules find trusted results in this mail; null when none does. */
  preset: ProviderName | null;
  /** For `self-hosted`: the patterns to paste (whole-name, as the config takes them). */
  patterns: { authservId: string; borderHost: string } | null;
  /** The border hop found, as a sentence, or null. */
  border: string | null;
  /** The trusted results, when a preset or the printed patterns find them. */
  results: TrustedResults | null;
  /** What was found, trusted and ignored, one sentence each. */
  notes: string[];
}

const DETECTABLE: ProviderName[] = ['fastmail', 'gmail', 'outlook', 'icloud', 'yahoo'];

/** A regular expression matching exactly `s`, case-insensitively as the config applies it. */
export function literalPattern(s: string): string {
  return s.toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function summary(r: TrustedResults): string {
  const dkim = r.dkim.map((d) => `dkim=${d.result} header.d=${d.headerD ?? '?'}${d.headerB ? ` header.b=${d.headerB}` : d.headerS ? ` header.s=${d.headerS}` : ''}`);
  const dmarc = r.dmarc.map((d) => `dmarc=${d.result} header.from=${d.headerFrom ?? '?'}`);
  const spf = r.spf.map((s) => `spf=${s.result}`);
  return [...dkim, ...spf, ...dmarc].join('; ') || 'no dkim, spf or dmarc result';
}

/** Sentences about fields that are never trusted, whoever wrote them. */
function neverTrusted(fields: readonly HeaderField[]): string[] {
  const notes: string[] = [];
  for (const f of fields) {
    if (f.lname.startsWith('arc-')) {
      if (f.lname === 'arc-authentication-results') notes.push(`ignored ${f.name} #${f.index}: ARC-* fields record a handler's view for the next hop, never results the bridge trusts`);
    } else if (f.lname.endsWith('-original') && f.lname.startsWith('authentication-results')) {
      notes.push(`ignored ${f.name} #${f.index}: a renamed upstream field (Microsoft keeps the results it received this way), never trusted`);
    }
  }
  return notes;
}

/**
 * A self-hosted MTA: the topmost Received from a public address whose `by` is a host name is the
 * border; the authserv-id of the A-R above it (the one naming that host, else the most frequent)
 * is the id. @returns the patterns when they find trusted results, with notes either way
 */
function selfHosted(fields: readonly HeaderField[]): { patterns: Detection['patterns']; profile: ProviderProfile | null; notes: string[] } {
  const notes: string[] = [];
  const hop = fields
    .filter((f) => f.lname === 'received')
    .map((f) => ({ index: f.index, hop: parseReceived(f.value) }))
    .find(({ hop }) => hop.by !== null && /[a-z]/.test(hop.by) && hop.fromIps.length > 0 && !hop.fromIps.every(isInternalIp));
  if (!hop) return { patterns: null, profile: null, notes: ['no Received field from a public address to a named host: cannot tell where your provider accepted this mail (is it a mail you received from outside?)'] };
  const host = hop.hop.by!;
  const idOf = (f: HeaderField): string | null => parseAuthResults(f.value)?.authservId.toLowerCase() ?? null;
  const above = fields.filter((f) => f.lname === 'authentication-results' && f.index < hop.index).map(idOf).filter((x): x is string => x !== null);
  const below = fields.filter((f) => f.lname === 'authentication-results' && f.index > hop.index && f.index <= hop.index + 8).map(idOf).filter((x): x is string => x !== null);
  const pick = (ids: string[]): string | undefined => (ids.includes(host) ? host : [...ids].sort((a, b) => ids.filter((x) => x === b).length - ids.filter((x) => x === a).length)[0]);
  const id = pick(above);
  if (!id) {
    const under = pick(below);
    notes.push(
      under
        ? `${under} writes its Authentication-Results under its own Received (#${hop.index}), where a sender's forged fields also sit; the bridge cannot trust them. Make the milter insert them above the Received (RFC 8601 §5; OpenDKIM PR #126), then run this again`
        : `no Authentication-Results above the border Received #${hop.index} by ${host}: does your MTA run a DKIM/DMARC milter (OpenDKIM, OpenDMARC, rspamd)?`,
    );
    return { patterns: null, profile: null, notes };
  }
  const patterns = { authservId: literalPattern(id), borderHost: literalPattern(host) };
  const profile = profileOf('self-hosted', { authservId: new RegExp(`^(?:${patterns.authservId})$`, 'i'), borderHost: new RegExp(`^(?:${patterns.borderHost})$`, 'i') });
  return { patterns, profile, notes };
}

/**
 * Analyses one message. Never throws.
 * @param raw the whole message as received (at least its header block)
 */
export function detectProvider(raw: Buffer): Detection {
  const { fields } = parseHeaderBlock(splitMessage(raw).header);
  const notes = neverTrusted(fields);
  for (const name of DETECTABLE) {
    const profile = profileOf(name);
    const out = findTrustedResults(fields, profile);
    if (!out.ok) continue;
    const border = findBorder(fields, profile);
    const how = PRESETS[name].idless ? 'no authserv-id, written by the border hop' : PRESETS[name].placement === 'below' ? "in the provider's stamp under its Received" : 'above the border Received';
    notes.unshift(`trusted Authentication-Results ${out.trusted.map((i) => `#${i}`).join(', ')} (${how}): ${summary(out.results)}`);
    return { preset: name, patterns: null, border: border ? out.reason.split(';')[0]! : null, results: out.results, notes };
  }
  const idless = fields.filter((f) => f.lname === 'authentication-results' && parseAuthResults(f.value) === null && parseIdlessAuthResults(f.value) !== null);
  if (idless.length) notes.push(`Authentication-Results #${idless.map((f) => f.index).join(', #')} carry no authserv-id (the Microsoft form), but no Received by *.mail.protection.outlook.com from outside was found above them`);
  const own = selfHosted(fields);
  notes.push(...own.notes);
  if (!own.profile || !own.patterns) return { preset: null, patterns: null, border: null, results: null, notes };
  const out = findTrustedResults(fields, own.profile);
  if (!out.ok) return { preset: null, patterns: null, border: null, results: null, notes: [...notes, out.reason] };
  notes.unshift(`trusted Authentication-Results ${out.trusted.map((i) => `#${i}`).join(', ')} (above the border Received): ${summary(out.results)}`);
  return { preset: 'self-hosted', patterns: own.patterns, border: out.reason.split(';')[0]!, results: out.results, notes };
}

/** The `[mailbox]` lines that select what `d` found. */
export function configLines(d: Detection): string[] {
  if (!d.preset) return [];
  if (d.preset !== 'self-hosted' || !d.patterns) return [`provider = "${d.preset}"`];
  return ['provider = "self-hosted"', `authserv_id = '${d.patterns.authservId}'`, `border_host = '${d.patterns.borderHost}'`];
}
