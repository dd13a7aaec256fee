/**
 * Provider presets: how each mailbox provider's trusted Authentication-Results are
 * recognised and where its border is. The sources for every layout are in docs/providers.md;
 * the short form is on each preset below.
 *
 * Three ways a provider stamps its results relative to the border hop (its own Received `by`
 * <provider MX> `from` an outside host), all handled by `findTrustedResults` (border.ts):
 * - `above` (RFC 8601 §5, Fastmail, Microsoft): the A-R fields are written above the border
 *   Received, like every trace field;
 * - `below` (Gmail, iCloud, Yahoo): the provider writes its Received and then, in the same stamp,
 *   its Received-SPF and A-R fields *under* it. Only the stamp is trusted: the fields from the
 *   border Received down to the first A-R whose authserv-id matches `stampEndId`, which the
 *   provider always writes last. Anything the sender wrote comes after that field.
 * - `idless` (Microsoft 365 / Outlook.com): the A-R has no authserv-id at all, so it is
 *   recognised by position only: written by the border hop itself, between the border Received
 *   and the next Received above it. Microsoft renames the A-R fields it received to
 *   `Authentication-Results-Original`, which are never read.
 * A field below the border that is not part of the provider's own stamp is never trusted.
 */

/** The preset names of `mailbox.provider`. */
export const PROVIDER_NAMES = ['fastmail', 'gmail', 'outlook', 'icloud', 'yahoo', 'self-hosted'] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];

/** Where the border MTA writes its Authentication-Results relative to its own Received field. */
export type ResultsPlacement = 'above' | 'below';

/** Pattern sources (whole-name, case-insensitive) of one preset, as `mailbox.authserv_id`/`border_host` take them. */
export interface ProviderPreset {
  name: ProviderName;
  /** What people call it, for messages. */
  label: string;
  /** authserv-ids trusted for every method (RFC 8601 §2.5); null for Microsoft (no authserv-id). */
  authservId: string | null;
  /** Per-method authserv-ids (iCloud writes one field per method): a field counts only for its method. */
  methodIds?: { dkim: string; dmarc: string; spf: string };
  /** Hosts in the border Received's `by` clause. */
  borderHost: string;
  placement: ResultsPlacement;
  /** `below` only: the authserv-id of the A-R field the provider writes last in its stamp. */
  stampEndId?: string;
  /** The provider writes Authentication-Results without an authserv-id (Microsoft). */
  idless?: boolean;
  /** OAuth2 sign-in for IMAP, when the provider needs or offers it. */
  oauth2?: 'google' | 'microsoft';
  /** IMAP server, for `init` and the README table. */
  imapHost?: string;
}

/** Fastmail: per-host MX names such as mx1.messagingengine.com or phl-mx-04.messagingengine.com. */
export const FASTMAIL_HOST_PATTERN = '[a-z0-9-]+\\.messagingengine\\.com';

export const PRESETS: Readonly<Record<ProviderName, ProviderPreset>> = {
  // RFC 8601 layout: internal hops on top, several A-R fields by the MX host, then the border.
  fastmail: {
    name: 'fastmail',
    label: 'Fastmail',
    authservId: FASTMAIL_HOST_PATTERN,
    borderHost: FASTMAIL_HOST_PATTERN,
    placement: 'above',
    imapHost: 'imap.fastmail.com',
  },
  // Gmail and Google Workspace: `Received: from … by mx.google.com`, then `Received-SPF`, then one
  // `Authentication-Results: mx.google.com;` (celorodovalho/phpdfbot#1, muan/github-gmail#86,
  // badstreff/Apple-ID-Verifier#1). The ARC-Authentication-Results above it is never read.
  gmail: {
    name: 'gmail',
    label: 'Gmail / Google Workspace',
    authservId: 'mx\\.google\\.com',
    borderHost: 'mx\\.google\\.com',
    placement: 'below',
    stampEndId: 'mx\\.google\\.com',
    oauth2: 'google',
    imapHost: 'imap.gmail.com',
  },
  // Microsoft 365 and Outlook.com: `Authentication-Results: spf=pass (sender IP is …)` without an
  // authserv-id, then `Received-SPF`, directly above `Received: from … by
  // XXX.mail.protection.outlook.com` (mailcow/mailcow-dockerized#1371, roehling/postsrsd#101,
  // forwardemail/free-email-forwarding#214, ohdearquant/khive#500).
  outlook: {
    name: 'outlook',
    label: 'Microsoft 365 / Outlook.com',
    authservId: null,
    borderHost: '[a-z0-9-]+\\.mail\\.protection\\.outlook\\.com',
    placement: 'above',
    idless: true,
    oauth2: 'microsoft',
    imapHost: 'outlook.office365.com',
  },
  // iCloud: `Received: from … by xxNNpNNim-….me.com (Postfix)`, then X-ICL-*, one A-R field per
  // method (bimi, arc, dmarc, dkim-verifier — one per signature —, spf) and Received-SPF
  // (https://github.com/tmornini/vsa-file-format-go/blob/main/original-email.md; chatmail/core
  // test data, test-data/message/dkimchecks-2022-09-28/alice@icloud.com, removed in chatmail/core#8175).
  icloud: {
    name: 'icloud',
    label: 'iCloud Mail',
    authservId: '(?:dkim-verifier|dmarc|spf)\\.icloud\\.com',
    methodIds: { dkim: 'dkim-verifier\\.icloud\\.com', dmarc: 'dmarc\\.icloud\\.com', spf: 'spf\\.icloud\\.com' },
    borderHost: '(?:[a-z0-9-]+\\.)+(?:me|icloud)\\.com',
    placement: 'below',
    stampEndId: 'spf\\.icloud\\.com',
    imapHost: 'imap.mail.me.com',
  },
  // Yahoo and AOL (the "atlas" MX): `Received: from <ip> (EHLO …) by atlasNNN….yahoo.com`, then
  // X-Originating-Ip, Received-SPF and one `Authentication-Results: atlas….yahoo.com;`
  // (pimlie/authres_status#39); dkim results name header.i and header.s, not header.d or header.b.
  yahoo: {
    name: 'yahoo',
    label: 'Yahoo / AOL',
    authservId: '(?:[a-z0-9-]+\\.)+yahoo\\.com',
    borderHost: '(?:[a-z0-9-]+\\.)+yahoo\\.com',
    placement: 'below',
    stampEndId: '(?:[a-z0-9-]+\\.)+yahoo\\.com',
    imapHost: 'imap.mail.yahoo.com',
  },
  // Your own MTA (Postfix with OpenDKIM/OpenDMARC, rspamd, …): its host name in both patterns,
  // written by `a2a-mailbridge provider detect`; the milter must insert A-R above its Received.
  'self-hosted': {
    name: 'self-hosted',
    label: 'self-hosted MTA',
    authservId: null,
    borderHost: '',
    placement: 'above',
  },
};

/** OAuth2 endpoints of the two providers whose IMAP needs it (RFC 8628 device grant, RFC 6749 token). */
export const OAUTH2_PRESETS = {
  google: {
    tokenUrl: 'https://oauth2.googleapis.com/token',
    deviceUrl: 'https://oauth2.googleapis.com/device/code',
    scope: 'https://mail.google.com/',
  },
  microsoft: {
    tokenUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/token',
    deviceUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/devicecode',
    scope: 'https://outlook.office.com/IMAP.AccessAsUser.All offline_access',
  },
} as const;
export type OAuth2PresetName = keyof typeof OAUTH2_PRESETS;
