/**
 * Mail in which no config can find a provider's border: what the border rule
 * (src/uplink/border.ts `findBorder`) proves of a message from its Received fields alone, whatever
 * the provider profile. `doctor` reads it to tell a mail that never came in from outside (written
 * into a Maildir by hand or by a local program) from one refused because of the provider settings.
 */
import { stampFieldTrust, type ProviderProfile } from './border.js';
import type { HeaderField } from './raw-headers.js';
import { isInternalIp, parseReceived } from './received.js';

/**
 * - `no-received`: the message has no Received field at all. Every SMTP server that takes a
 *   message in prepends one (RFC 5321 §4.4), so no mail server received it and no provider's
 *   stamp can be in it.
 * - `inside-only`: every Received field names its sender by loopback or private addresses only
 *   (received.ts `isInternalIp`). The border rule counts such a hop as inside the provider under
 *   every profile (border.ts `peerInside`), so none can be the border: the message never came in
 *   from outside this machine or its network.
 */
export type Unbordered = 'no-received' | 'inside-only';

/**
 * @param fields the header block as the gates read it (raw-headers.ts `parseHeaderBlock`)
 * @returns why no provider profile can find a border in these fields, or null when some Received
 *   field could be the border under some profile (whether it is depends on the config). Never throws.
 */
export function unbordered(fields: readonly HeaderField[]): Unbordered | null {
  const hops = fields.filter((f) => f.lname === 'received').map((f) => parseReceived(f.value));
  if (hops.length === 0) return 'no-received';
  return hops.every((h) => h.fromIps.length > 0 && h.fromIps.every(isInternalIp)) ? 'inside-only' : null;
}

/**
 * The Authentication-Results fields of `fields` that pass gate 5's id test for `profile`
 * (border.ts `stampFieldTrust`: the configured authserv-id, iCloud's per-method ids, or id-less for
 * Microsoft) wherever they lie: the fields the config would trust were they in a stamp at a border.
 * In a mail with no border they are stamps its maker wrote to look like the configured provider's.
 * Never throws.
 */
export function stampsTrustedById(fields: readonly HeaderField[], profile: ProviderProfile): HeaderField[] {
  return fields.filter((f) => f.lname === 'authentication-results' && stampFieldTrust(f.value, profile).allowed.length > 0);
}
