/**
 * The mail factory: the raw bytes of a cloud agent's reply (docs/architecture.md, "The reply
 * format") as they would sit in the person's mailbox after the provider accepted them — composed by
 * the agent, DKIM-signed by the agent's domain, then stamped by the provider's MX. The demo's
 * simulated agent and the tests build every reply (good and forged) here.
 *
 * Header order of the result, top to bottom (RFC 5321 §4.4 and RFC 8601 §5: each hop prepends):
 * ```
 * Authentication-Results: <authservId>; dkim=pass … header.d=<domain> …   ← provider (optional)
 * Received: from <fromHost> (<fromHost> [<fromIp>]) by <mxHost> …          ← provider (optional)
 * DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=<domain>; …     ← agent (optional)
 * From / To / Subject / Message-ID / Date / MIME-Version / Content-Type …    ← composed
 * ```
 * Line ends are CRLF throughout, body included (nodemailer keeps bare LFs of the text unless told
 * `newline: 'win'`, so that is set).
 */
import { createPrivateKey, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { dkimSign, type DKIMSignOptions } from 'mailauth';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type { ReplyStatusWord } from '../uplink/reply-format.js';

/** The statuses of the reply block (docs/architecture.md, "The reply format"). */
export type ReplyStatus = ReplyStatusWord;

/** The agent's DKIM signing identity. */
export interface DkimIdentity {
  /** The `d=` domain. */
  domain: string;
  /** The `s=` selector; the key is published at `<selector>._domainkey.<domain>`. */
  selector: string;
  /** PKCS#8 or PKCS#1 PEM of an RSA key. */
  privateKeyPem: string;
  /**
   * Header fields to sign, overriding mailauth's default list (From, Sender, Reply-To, Subject,
   * Date, Message-ID, To, Cc, MIME-Version, Content-Type, …, In-Reply-To, References, List-*).
   */
  headerList?: string[];
}

/** What the provider's MX stamps when it accepts the mail from the outside. */
export interface ProviderStamp {
  /** The MX host in the Received `by` clause, e.g. `mx1.messagingengine.com`. */
  mxHost: string;
  /** The authserv-id that opens Authentication-Results (RFC 8601 §2.5), e.g. the MX name. */
  authservId: string;
  /** The sending host the MX saw (HELO and reverse name), e.g. `mail.agent.example`. */
  fromHost: string;
  /** The sending host's IP, e.g. `192.0.2.25`. */
  fromIp: string;
  /** Everything after `<authservId>;` in Authentication-Results, replacing the computed results. */
  results?: string;
  /**
   * `fastmail` (default): the results with the comments and `header.i/b/a/s` properties Fastmail
   * writes, folded over several lines. `plain`: one line, only `header.d`/`header.s`, no comments.
   * Neither adds ARC headers.
   */
  style?: 'fastmail' | 'plain';
  /** When the MX accepted the mail; default the mail's Date plus 2 s. */
  receivedAt?: Date;
}

export interface ReplyMailOptions {
  /** The agent's From: a plain address or `Name <address>`. */
  from: string;
  to: string;
  subject: string;
  /** Date header; default now. */
  date?: Date;
  /** Message-ID with angle brackets; default `<uuid@from-domain>`. */
  messageId?: string;
  inReplyTo?: string;
  /** Raw text/plain body; default the reply block built from `token`, `status` and `answer`. */
  body?: string;
  /** 32 lowercase hex in real replies; not checked here so tests can send bad ones. */
  token?: string;
  /** Default `done`; any text so tests can send a bad status. */
  status?: ReplyStatus | (string & {});
  /** The answer after the `---` line; default empty. */
  answer?: string;
  /** When given, the mail is multipart/alternative with this as its text/html part. */
  html?: string;
  /** Attachments (the mail becomes multipart/mixed): each a name, a media type and its bytes. */
  attachments?: { filename: string; contentType: string; content: Buffer | string }[];
  /** The shared part of the multipart boundaries (nodemailer's `baseBoundary`); random by default. */
  baseBoundary?: string;
  /** Further headers of the mail as the agent sent it (below the signature), e.g. a forged A-R. */
  headers?: Record<string, string>;
  /** Sign with mailauth's dkimSign (RSA-SHA256, relaxed/relaxed) and prepend DKIM-Signature. */
  dkim?: DkimIdentity;
  /** Stamp Received and Authentication-Results above everything, as the provider's MX would. */
  provider?: ProviderStamp;
}

/**
 * The reply block (docs/architecture.md, "The reply format"): `reply_token: <token>\nstatus:
 * <status>\n---\n<answer>`.
 */
export function replyBody(token: string, status: string, answer: string): string {
  return `reply_token: ${token}\nstatus: ${status}\n---\n${answer}`;
}

/** `<selector>._domainkey.<domain>` (RFC 6376 §3.6.2.1). */
export function dkimTxtName(selector: string, domain: string): string {
  return `${selector}._domainkey.${domain}`;
}

/**
 * A fresh RSA-2048 DKIM key pair (RFC 8301 §3.2: at least 1024, 2048 recommended).
 * `publicKeyTxt` is the TXT value to publish: `v=DKIM1; k=rsa; p=<base64 DER SubjectPublicKeyInfo>`.
 */
export function generateDkimKey(): { privateKeyPem: string; publicKeyTxt: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { privateKeyPem: privateKey, publicKeyTxt: `v=DKIM1; k=rsa; p=${publicKey.toString('base64')}` };
}

/** The bare address of `Name <addr>` or `addr`, lower-cased. */
export function bareAddress(from: string): string {
  return (/<([^<>\s]+)>\s*$/.exec(from)?.[1] ?? from).trim().toLowerCase();
}

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1);
}

/** RFC 5322 §3.3 date-time in UTC, e.g. `Thu, 02 Jan 2025 03:04:05 +0000`. */
export function rfc5322Date(d: Date): string {
  return d.toUTCString().replace(/GMT$/, '+0000');
}

/** A Postfix-like queue id: 15 characters of [0-9A-Za-z]. */
function queueId(): string {
  const alphabet = '0123456789BCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz';
  return [...randomBytes(15)].map((b) => alphabet[b % alphabet.length]).join('');
}

/** The `b=` value of a DKIM-Signature header field, whitespace removed (RFC 6376 §3.5). */
export function signatureB(dkimSignatureField: string): string {
  const value = dkimSignatureField.replace(/^[^:]*:/, '').replace(/\s+/g, '');
  return /(?:^|;)b=([^;]*)/.exec(value)?.[1] ?? '';
}

function rsaBits(pem: string): number {
  return createPrivateKey(pem).asymmetricKeyDetails?.modulusLength ?? 0;
}

function authResults(o: ReplyMailOptions, p: ProviderStamp, dkimField: string | null): string {
  if (p.results !== undefined) return `Authentication-Results: ${p.authservId};\r\n    ${p.results}`;
  const mailFrom = bareAddress(o.from);
  const fromDomain = domainOf(mailFrom);
  const spf = `spf=pass smtp.mailfrom=${mailFrom}`;
  if (!o.dkim || dkimField === null) {
    const parts = ['dkim=none (no signatures found)', spf, `dmarc=fail (p=reject) header.from=${fromDomain}`];
    if (p.style === 'plain') parts[0] = 'dkim=none';
    return `Authentication-Results: ${p.authservId}; ${parts.join('; ')}`;
  }
  const d = o.dkim.domain;
  const aligned = d.toLowerCase() === fromDomain;
  const dmarc = aligned ? 'pass' : 'fail';
  if (p.style === 'plain') {
    return `Authentication-Results: ${p.authservId}; dkim=pass header.d=${d} header.s=${o.dkim.selector}; ${spf}; dmarc=${dmarc} header.from=${fromDomain}`;
  }
  return [
    `Authentication-Results: ${p.authservId};`,
    `    dkim=pass (${rsaBits(o.dkim.privateKeyPem)}-bit rsa key sha256) header.d=${d}`,
    `     header.i=@${d} header.b=${signatureB(dkimField).slice(0, 8)} header.a=rsa-sha256`,
    `     header.s=${o.dkim.selector};`,
    `    ${spf};`,
    `    dmarc=${dmarc} (p=reject) header.from=${fromDomain}`,
  ].join('\r\n');
}

function received(o: ReplyMailOptions, p: ProviderStamp, at: Date): string {
  return [
    `Received: from ${p.fromHost} (${p.fromHost} [${p.fromIp}])`,
    `\t(using TLSv1.3 with cipher TLS_AES_256_GCM_SHA384 (256/256 bits))`,
    `\tby ${p.mxHost} (Postfix) with ESMTPS id ${queueId()}`,
    `\tfor <${bareAddress(o.to)}>; ${rfc5322Date(at)}`,
  ].join('\r\n');
}

/**
 * Builds the reply's raw bytes (CRLF line ends).
 *
 * @throws TypeError when neither `body` nor `token` is given.
 * @throws Error when mailauth produced no signature (bad key, unsupported key type); its `cause`
 *   is mailauth's first error entry (`{ selector, signingDomain, err }`), when there is one.
 */
export async function buildReplyMail(o: ReplyMailOptions): Promise<Buffer> {
  if (o.body === undefined && o.token === undefined) {
    throw new TypeError('buildReplyMail: give either body or token (with status and answer)');
  }
  const date = o.date ?? new Date();
  const fromAddress = bareAddress(o.from);
  const text = (o.body ?? replyBody(o.token!, o.status ?? 'done', o.answer ?? '')).replace(/\r\n?/g, '\n');
  const composer = new MailComposer({
    newline: 'win',
    from: o.from,
    to: o.to,
    subject: o.subject,
    date,
    messageId: o.messageId ?? `<${randomUUID()}@${domainOf(fromAddress)}>`,
    ...(o.inReplyTo ? { inReplyTo: o.inReplyTo, references: o.inReplyTo } : {}),
    ...(o.headers ? { headers: o.headers } : {}),
    text,
    ...(o.html !== undefined ? { html: o.html } : {}),
    ...(o.attachments ? { attachments: o.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, content: a.content })) } : {}),
    ...(o.baseBoundary ? { baseBoundary: o.baseBoundary } : {}),
  });
  let raw = await composer.compile().build();

  let dkimField: string | null = null;
  if (o.dkim) {
    // mailauth 4.13 signs only the entries of `signatureData`; the top-level signingDomain,
    // selector and privateKey its .d.ts asks for are ignored, and the result is then no signature
    // and no error. It also reads headerList only as a colon-separated string (the .d.ts says
    // string[]; an array is silently replaced by the default list). Hence the cast.
    const signOptions = {
      canonicalization: 'relaxed/relaxed',
      algorithm: 'rsa-sha256',
      signTime: date,
      ...(o.dkim.headerList ? { headerList: o.dkim.headerList.join(':') } : {}),
      signatureData: [{ signingDomain: o.dkim.domain, selector: o.dkim.selector, privateKey: o.dkim.privateKeyPem }],
    } as unknown as DKIMSignOptions;
    const signed = await dkimSign(raw, signOptions);
    const failure = signed.errors[0];
    if (failure || !signed.signatures.trim()) {
      throw new Error(`buildReplyMail: DKIM signing failed for ${o.dkim.selector}._domainkey.${o.dkim.domain}`, {
        cause: failure,
      });
    }
    dkimField = signed.signatures.replace(/\r\n$/, '');
    raw = Buffer.concat([Buffer.from(signed.signatures, 'utf8'), raw]);
  }

  if (o.provider) {
    const at = o.provider.receivedAt ?? new Date(date.getTime() + 2000);
    const stamp = `${authResults(o, o.provider, dkimField)}\r\n${received(o, o.provider, at)}\r\n`;
    raw = Buffer.concat([Buffer.from(stamp, 'utf8'), raw]);
  }
  return raw;
}
