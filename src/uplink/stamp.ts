/**
 * The stamp rule (docs/architecture.md, "The header stage"): gates 5–7 read on the provider's
 * stamp alone, from the first bytes of a header block. The provider prepends its Received from the
 * outside host (the border) and its Authentication-Results to every mail it accepts (RFC 5321
 * §4.4, RFC 8601 §5), so the stamp stands at the top of the header block, above everything the
 * sender wrote, and no sender can make it say `dkim=pass` for the agent's domain without the
 * agent's key. A mail whose stamp holds no trusted aligned pass is refused on it, however many
 * bytes the sender appended below. The rules are those of the whole judge — the border rule
 * (border.ts), gate 5's mapping, gate 6 (`dmarcHolds`) and gate 7's first half (`trustedPasses`,
 * gates.ts) — called on the whole fields of the prefix; and where those do not reach the border,
 * gate 3's cap on DKIM signatures, on what the prefix shows of them ({@link tooManySignatures}).
 */
import type { AgentConfig } from '../config/config.js';
import { plural } from '../plural.js';
import { findBorder, findTrustedResultsInPrefix, matchesWhole, stampFieldTrust, type ProviderProfile } from './border.js';
import { dmarcHolds, gate5, isRefusal, MAX_DKIM_SIGNATURES, trustedDkimSeen, trustedPasses, type Refusal } from './gates.js';
import { parseHeaderBlock, type HeaderField } from './raw-headers.js';

export { STAMP_PREFIX_BYTES } from './header-block.js';


/**
 * Gates 5–7 on the provider's stamp, read from `fields`, the whole fields at the top of a header
 * block that runs on past them (raw-headers.ts `headerPrefixFields`). In the judge's order:
 * gate 5 (a border and trusted Authentication-Results at it), gate 6 (no trusted DMARC failure,
 * no conflict), gate 7's first half (a trusted `dkim=pass` whose `header.d` is the domain of one
 * of `agents`). Each refusal is the one the whole judge's gates 5–7 give the whole message (the
 * top fields are the same, and the stamp window ends within them), so the whole judge never
 * applies a message this refuses.
 *
 * Where the fields do not reach the border or the end of the stamp (undecided), gate 3's count of
 * DKIM-Signature fields is read on `prefix` instead ({@link tooManySignatures}).
 *
 * @param prefix the bytes `fields` were read from (the field they cut short is read for gate 3)
 * @returns the refusal; null when the stamp holds an aligned pass for some agent (the whole header
 *   block must be read), or when the fields do not reach the border or the end of the stamp and
 *   show no more than {@link MAX_DKIM_SIGNATURES} signatures (undecided, never refused)
 */
export function stampRefusal(fields: readonly HeaderField[], profile: ProviderProfile, agents: readonly AgentConfig[], prefix?: Buffer): Refusal | null {
  const trust = findTrustedResultsInPrefix(fields, profile);
  if (trust.ok === 'undecided') return prefix ? tooManySignatures(fields, profile, prefix) : null;
  const trusted = gate5(trust);
  if (isRefusal(trusted)) return trusted;
  const dmarc = dmarcHolds(trusted);
  if (dmarc) return dmarc;
  const domains = [...new Set(agents.map((a) => a.dkimDomain))];
  for (const domain of domains) {
    const passes = trustedPasses(trusted, domain);
    if (isRefusal(passes)) return passes;
    if (passes.length > 0) return null;
  }
  return {
    verdict: 'auth:dkim-unaligned',
    reason: `gate 7: no trusted dkim=pass with header.d=${domains.join(' or ')} in the provider's stamp (trusted: ${trustedDkimSeen(trusted)}), so no DKIM-Signature of the message can align`,
  };
}

/**
 * Gate 3 on a prefix whose stamp is undecided: more than {@link MAX_DKIM_SIGNATURES} DKIM-Signature
 * fields, counted where the prefix shows them — the DKIM-Signature fields among its whole fields,
 * or the `dkim` results of one provider Authentication-Results (or ARC-Authentication-Results)
 * field above the border, the field the prefix cuts short included (read up to its last `;`).
 * A provider lists one `dkim` result per DKIM-Signature it evaluated (Fastmail, Gmail: attack
 * review 6, F4), so a stamp that lists more came with more signatures, which gate 3 refuses on
 * the whole header block; a sender who adds hundreds makes the stamp run past the prefix, and
 * this refuses it without reading the block on to 256 KiB. A field counts when it stands above
 * the border (every field read, when the border is not among them: where there is no border at
 * all, gate 5 refuses the message too), or — `below` presets — it is the cut field and an
 * Authentication-Results of the stamp's end id (the first such under the border ends the stamp);
 * when its id is the provider's (border.ts `stampFieldTrust`, `dkim` among its methods). Results
 * are counted once per distinct (result, `header.d/i/b/s`). Linear in the prefix; never throws.
 * @returns gate 3's refusal, or null
 */
function tooManySignatures(fields: readonly HeaderField[], profile: ProviderProfile, prefix: Buffer): Refusal | null {
  const signatures = fields.filter((f) => f.lname === 'dkim-signature').length;
  if (signatures > MAX_DKIM_SIGNATURES) return { verdict: 'auth:duplicate-header', reason: `gate 3: at least ${signatures} DKIM-Signature headers; at most ${MAX_DKIM_SIGNATURES} are verified` };
  const border = findBorder(fields, profile)?.index ?? Infinity;
  const cut = parseHeaderBlock(prefix).fields[fields.length];
  const stampEnd = profile.stampEndId ?? profile.authservId;
  const candidates = fields.filter((f) => f.index < border);
  if (cut && (border === Infinity || (cut.lname === 'authentication-results' && matchesWhole(stampEnd, stampFieldTrust(cut.value, profile).id ?? '')))) candidates.push(cut);
  for (const f of candidates) {
    const n = dkimResultsListed(f, f === cut, profile);
    if (n > MAX_DKIM_SIGNATURES) {
      const which = `${f.name} #${f.index}${f === cut ? `, cut short by the prefix,` : ''}`;
      return { verdict: 'auth:duplicate-header', reason: `gate 3: at least ${n} DKIM-Signature headers (the provider's ${which} lists ${n} dkim results, one per signature); at most ${MAX_DKIM_SIGNATURES} are verified` };
    }
  }
  return null;
}

/** The distinct `dkim` results a provider's (ARC-)Authentication-Results field lists; 0 for any other field. */
function dkimResultsListed(f: HeaderField, cut: boolean, profile: ProviderProfile): number {
  if (f.lname !== 'authentication-results' && f.lname !== 'arc-authentication-results') return 0;
  // ARC-Authentication-Results is `i=<instance>;` and an Authentication-Results value (RFC 8617 §4.1.1).
  let value = f.lname === 'arc-authentication-results' ? f.value.replace(/^\s*i\s*=\s*\d{1,2}\s*;/, '') : f.value;
  if (cut) value = value.slice(0, value.lastIndexOf(';') + 1);
  const { parsed, allowed } = stampFieldTrust(value, profile);
  if (!parsed || !(allowed.includes('*') || allowed.includes('dkim'))) return 0;
  const keys = new Set<string>();
  for (const r of parsed.results) if (r.method === 'dkim') keys.add(JSON.stringify([r.result, ...['d', 'i', 'b', 's'].map((p) => r.props.find((x) => x.ptype === 'header' && x.property === p)?.value ?? null)]));
  return keys.size;
}

/** How a stamp refusal's reason says where it was read. */
export function onTheStamp(r: Refusal, prefixBytes: number, fields: number): Refusal {
  return { ...r, reason: `${r.reason} (read on the provider's stamp: ${plural(fields, 'whole field')} in the first ${prefixBytes} bytes of a longer header block)` };
}
