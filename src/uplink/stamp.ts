/**
 * The stamp rule (docs/architecture.md, "The header stage"): gates 5–7 read on the provider's
 * stamp alone, from the first bytes of a header block. The provider prepends its Received from the
 * outside host (the border) and its Authentication-Results to every mail it accepts (RFC 5321
 * §4.4, RFC 8601 §5), so the stamp stands at the top of the header block, above everything the
 * sender wrote, and no sender can make it say `dkim=pass` for the agent's domain without the
 * agent's key. A mail whose stamp holds no trusted aligned pass is refused on it, however many
 * bytes the sender appended below. The rules are those of the whole judge — the border rule
 * (border.ts), gate 5's mapping, gate 6 (`dmarcHolds`) and gate 7's first half (`trustedPasses`,
 * gates.ts) — called on the whole fields of the prefix.
 */
import type { AgentConfig } from '../config/config.js';
import { plural } from '../plural.js';
import { findTrustedResultsInPrefix, type ProviderProfile } from './border.js';
import { dmarcHolds, gate5, isRefusal, trustedDkimSeen, trustedPasses, type Refusal } from './gates.js';
import type { HeaderField } from './raw-headers.js';

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
 * @returns the refusal; null when the stamp holds an aligned pass for some agent (the whole header
 *   block must be read), or when the fields do not reach the border or the end of the stamp
 *   (undecided, never refused)
 */
export function stampRefusal(fields: readonly HeaderField[], profile: ProviderProfile, agents: readonly AgentConfig[]): Refusal | null {
  const trust = findTrustedResultsInPrefix(fields, profile);
  if (trust.ok === 'undecided') return null;
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

/** How a stamp refusal's reason says where it was read. */
export function onTheStamp(r: Refusal, prefixBytes: number, fields: number): Refusal {
  return { ...r, reason: `${r.reason} (read on the provider's stamp: ${plural(fields, 'whole field')} in the first ${prefixBytes} bytes of a longer header block)` };
}
