/**
 * Whether a mail `doctor` judges carries a sign that it is the agent's which its sender cannot
 * make: the rule by which a refused latest mail fails doctor (the config is the suspect) or is a
 * warning (anyone can send mail naming the agent and its task). docs/providers.md, "doctor and a
 * refused mail", says why; src/cli/doctor-mail.ts asks it.
 */
import type { AgentConfig } from '../config/config.js';
import { findTrustedResults, type ProviderProfile } from '../uplink/border.js';
import { parseDkimSignatures, verifyDkimLocally, type DnsResolver } from '../uplink/dkim.js';
import { MAX_DKIM_SIGNATURES } from '../uplink/gates.js';
import type { HeaderField } from '../uplink/raw-headers.js';

/** The mail as doctor holds it: its header fields, its bytes as the ledger kept them, and whether they are all of it. */
export interface SignedMail {
  fields: readonly HeaderField[];
  raw: Buffer;
  /** The ledger kept only the first bytes (refused mail): the body, and so local DKIM verification, is out of reach. */
  partial: boolean;
  /** When the mailbox received it, ms since the epoch (DKIM `x=` is judged as of then); null: now. */
  receivedAt: number | null;
}

/** A sign that the mail is the agent's, or why there is none; `text` is in the bridge's words (no text of the mail in it). */
export type AgentSign =
  | { sign: true; text: string }
  /** `unverified`: the mail carries a DKIM-Signature of the agent's domain that could not be verified here. */
  | { sign: false; text: string; unverified: boolean };

/**
 * The first of these signs, in this order, that `mail` is the agent's:
 * 1. a `dkim=pass` for `agent.dkimDomain`, or a `dmarc=pass` for the domain of `agent.address`, in
 *    the Authentication-Results the configured border rule trusts (src/uplink/border.ts
 *    `findTrustedResults`): the provider vouched for the agent's domain (DMARC passes only for a
 *    DKIM signature or a sending server the domain's owner made, RFC 7489 §4.2);
 * 2. a DKIM-Signature with `d=` the agent's DKIM domain that verifies locally (RFC 6376 §6, keys
 *    looked up through `resolver`, `x=` as of `receivedAt`): only the agent's key makes one, so it
 *    holds however wrong the config's trust settings are.
 * Nothing else is a sign: a stamp outside the trusted place (below the border, by another
 * authserv-id), a signature of another domain, a copied signature over changed text, a From naming
 * the agent — anyone can write those. A signature that cannot be verified here (the ledger kept
 * only the first bytes of the mail, or its key could not be looked up now) is not a sign either,
 * and the text says so: anyone can pad a forgery past what the ledger keeps. Only the first
 * {@link MAX_DKIM_SIGNATURES} signatures of the agent's domain are verified (gate 3 refuses more).
 * Never throws on hostile bytes.
 */
export async function agentSign(mail: SignedMail, agent: AgentConfig, profile: ProviderProfile, resolver: DnsResolver): Promise<AgentSign> {
  const trust = findTrustedResults(mail.fields, profile);
  const fromDomain = agent.address.slice(agent.address.lastIndexOf('@') + 1).toLowerCase();
  if (trust.ok) {
    if (trust.results.dkim.some((d) => d.result === 'pass' && d.headerD === agent.dkimDomain)) return { sign: true, text: `the Authentication-Results the config trusts hold dkim=pass for ${agent.dkimDomain}` };
    if (trust.results.dmarc.some((d) => d.result === 'pass' && d.headerFrom === fromDomain)) return { sign: true, text: `the Authentication-Results the config trusts hold dmarc=pass for ${fromDomain}` };
  }
  const none = `no dkim=pass for ${agent.dkimDomain} or dmarc=pass for ${fromDomain} in the Authentication-Results the config trusts, and no DKIM-Signature of ${agent.dkimDomain} that verifies`;
  const ours = parseDkimSignatures(mail.fields).filter((s) => s.d === agent.dkimDomain).slice(0, MAX_DKIM_SIGNATURES);
  if (ours.length === 0) return { sign: false, text: none, unverified: false };
  if (mail.partial) return { sign: false, text: `${none}: the ledger kept too few of its bytes to verify its DKIM-Signature of ${agent.dkimDomain}`, unverified: true };
  const local = await verifyDkimLocally(mail.raw, ours, resolver, mail.receivedAt !== null ? { now: new Date(mail.receivedAt) } : {});
  if (local.some((l) => l.status === 'pass')) return { sign: true, text: `its DKIM-Signature of ${agent.dkimDomain} verifies with the agent domain's key` };
  if (local.some((l) => l.status === 'temperror')) return { sign: false, text: `${none}: the key of its DKIM-Signature of ${agent.dkimDomain} could not be looked up now (run doctor again to verify it)`, unverified: true };
  return { sign: false, text: none, unverified: false };
}
