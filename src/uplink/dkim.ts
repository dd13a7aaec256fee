/**
 * DKIM-Signature facts read from the raw header fields (RFC 6376 §3.5), and local verification with
 * mailauth's `dkimVerify` (local DKIM verification looks up selector keys in DNS; the resolver's
 * servers are configurable).
 *
 * mailauth 7 runs in its lenient default mode (its strict mode refuses a `d=` with a trailing
 * dot, which genuine mail carries: test/fixtures/corpus 15) with one strict rule on: an rsa-sha1
 * signature is not valid (RFC 8301 §3.1). A tampered body gives `neutral`, not `fail`, and an
 * `l=` signature with appended text can still pass (RFC 6376 §8.2): callers accept only `pass`
 * and refuse `l=`.
 */
import { isIPv4, isIPv6 } from 'node:net';
import type { DKIMResult, DNSResolver } from 'mailauth';
import { withoutOtherSignatures } from './dkim-fields.js';
import { BudgetError, offload, OFFLOAD_MIN_BYTES, type BudgetTimer } from './offload.js';
import { parseHeaders, type HeaderField } from './raw-headers.js';

export interface DkimSignatureInfo {
  /** `d=`, lower-cased, trailing dot removed. */
  d: string;
  /** `s=`, as written. */
  s: string;
  /** `b=`, whitespace removed. */
  b: string;
  /** An `l=` tag is present (RFC 6376 §8.2: unsigned text may follow the signed body). */
  bodyLengthLimited: boolean;
  /** `h=`, lower-cased, in order, repeats kept (a repeat over-signs, RFC 6376 §5.4.2). */
  signedHeaders: string[];
  /** `a=`, lower-cased, e.g. `rsa-sha256`. */
  algorithm: string;
}

/** Tags RFC 6376 §3.5 marks REQUIRED. */
const REQUIRED_TAGS = ['v', 'a', 'b', 'bh', 'd', 'h', 's'] as const;

/**
 * Parses a DKIM-Signature tag-list (RFC 6376 §3.2). Null when the list is malformed, a tag is
 * repeated ("the entire tag-list is invalid"), a required tag is missing, or `v` is not 1.
 */
function parseTagList(value: string): Map<string, string> | null {
  const tags = new Map<string, string>();
  for (const piece of value.split(';')) {
    if (piece.trim() === '') continue;
    const eq = piece.indexOf('=');
    const rawName = eq < 0 ? '' : piece.slice(0, eq).trim();
    if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(rawName)) return null;
    const name = rawName.toLowerCase();
    if (tags.has(name)) return null;
    tags.set(name, piece.slice(eq + 1).trim());
  }
  if (REQUIRED_TAGS.some((t) => !tags.get(t)?.trim())) return null;
  if (tags.get('v')?.trim() !== '1') return null;
  return tags;
}

/**
 * The DKIM-Signature fields of a message, in field order. Unparseable ones (see `parseTagList`)
 * are skipped.
 */
export function parseDkimSignatures(fields: readonly HeaderField[]): DkimSignatureInfo[] {
  const out: DkimSignatureInfo[] = [];
  for (const f of fields) {
    if (f.lname !== 'dkim-signature') continue;
    const tags = parseTagList(f.value);
    if (!tags) continue;
    const d = (tags.get('d') ?? '').trim().toLowerCase().replace(/\.$/, '');
    if (!d) continue;
    out.push({
      d,
      s: (tags.get('s') ?? '').trim(),
      b: (tags.get('b') ?? '').replace(/\s+/g, ''),
      bodyLengthLimited: tags.has('l'),
      signedHeaders: (tags.get('h') ?? '')
        .split(':')
        .map((h) => h.trim().toLowerCase())
        .filter((h) => h !== ''),
      algorithm: (tags.get('a') ?? '').trim().toLowerCase(),
    });
  }
  return out;
}

/**
 * The signatures an Authentication-Results `dkim` entry refers to: same `d=` (exactly, after
 * lower-casing) and a `b=` that starts with `header.b`. RFC 6008 §2 has `header.b` carry at least
 * the first 8 characters of the signature; shorter or missing values match nothing.
 */
export function signaturesMatching(sigs: readonly DkimSignatureInfo[], headerD: string | null, headerB: string | null): DkimSignatureInfo[] {
  if (headerD === null || headerB === null || headerB.length < 8) return [];
  const d = headerD.toLowerCase().replace(/\.$/, '');
  return sigs.filter((s) => s.d === d && s.b.startsWith(headerB));
}

/**
 * A DNS lookup as mailauth calls it: TXT answers are arrays of string chunks; a missing name or
 * record rejects with an error whose `code` is `ENOTFOUND` or `ENODATA`.
 */
export type DnsResolver = (name: string, rrtype: string) => Promise<unknown>;

/** Rejects with `code: 'ETIMEOUT'` when `p` takes longer than `ms`. */
function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`DNS lookup of ${what} timed out after ${ms} ms`), { code: 'ETIMEOUT' })), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** `ip` or `ip:port` (`[v6]:port` for IPv6 with a port), as `Resolver.setServers` takes them. */
function validServer(entry: string): boolean {
  if (isIPv4(entry) || isIPv6(entry)) return true;
  const v4 = /^(\d+\.\d+\.\d+\.\d+):(\d{1,5})$/.exec(entry);
  const v6 = /^\[([^\]]+)\]:(\d{1,5})$/.exec(entry);
  const [host, port] = v4 ? [v4[1], v4[2]] : v6 ? [v6[1], v6[2]] : [undefined, undefined];
  if (host === undefined || port === undefined) return false;
  return (v4 ? isIPv4(host) : isIPv6(host)) && Number(port) >= 1 && Number(port) <= 65535;
}

/**
 * A resolver for local DKIM verification (config `[dns] servers`).
 *
 * @param servers `ip` or `ip:port` entries (`[v6]:port` for IPv6 with a port); empty means the
 *   system resolver.
 * @param options.timeoutMs the longest one lookup may take, retries included (default 5000 ms);
 *   then it rejects with `code: 'ETIMEOUT'`, which mailauth reports as `temperror`.
 * @throws TypeError when an entry is not an IP address with an optional port.
 */
export function makeResolver(servers: readonly string[], options: { timeoutMs?: number } = {}): DnsResolver {
  const timeoutMs = options.timeoutMs ?? 5000;
  const bad = servers.find((s) => !validServer(s));
  if (bad !== undefined) throw new TypeError(`a2a-mailbridge: DNS server ${JSON.stringify(bad)} is not "ip" or "ip:port"`);
  // node:dns/promises is loaded by the first lookup (the first signed mail), not at start
  // (docs/architecture.md, "Start-up and memory").
  let resolver: import('node:dns/promises').Resolver | undefined;
  const lazily = (): import('node:dns/promises').Resolver => {
    if (resolver) return resolver;
    resolver = new (process.getBuiltinModule('node:dns/promises').Resolver)({ timeout: Math.max(100, Math.floor(timeoutMs / 2)), tries: 2 });
    if (servers.length > 0) resolver.setServers([...servers]);
    return resolver;
  };
  return (name, rrtype) => withTimeout(lazily().resolve(name, rrtype), timeoutMs, `${name} ${rrtype}`);
}

export interface LocalDkimResult {
  d: string;
  s: string;
  /** The whole `b=`, whitespace removed. */
  b: string;
  /** mailauth's `status.result`: pass, fail, neutral, none, temperror, permerror or policy. */
  status: string;
  bodyLengthLimited: boolean;
  /** mailauth's A-R style line, e.g. `dkim=neutral (body hash did not verify) header.i=@… …`. */
  info: string;
  /** The message's verification ran over its time budget: no signature was judged (`info` says so). */
  overBudget?: true;
}

/** A mailauth result as it comes at run time: its declarations omit `info` (the A-R style line). */
type MailauthDkimResult = DKIMResult & { info?: string };

/**
 * Verifies the DKIM-Signature fields of the message with mailauth, looking up the keys of `keysOf`
 * alone (the signatures that can matter: gate 7's aligned candidates, uplink/gates.ts
 * `alignedSignatures`) through `resolver`, all at once and each within `options.timeoutMs`
 * (default 10000 ms, then `temperror`), before mailauth runs (`prefetchKeys`). mailauth is given a
 * resolver that answers from those lookups alone: a key it asks for that was not looked up — of any
 * other signature, or a name mailauth spells otherwise (a U-label in `s=` or `d=`) — fails at once
 * as a missing key, PERMFAIL by RFC 6376 §6.1.2 ("no key for signature"; mailauth's lenient mode
 * reports it `neutral (no key)`), so such a signature costs no DNS query and no RSA operation,
 * and a name server that does not answer costs one timeout for the whole message.
 *
 * @param keysOf the signatures (by `b=`) whose keys are looked up; at most
 *   {@link MAX_PREFETCHED_KEYS} distinct names, the rest are not looked up.
 * @param options.now the time for `t=`/`x=` checks (default: now).
 * @param options.budgetMs the time budget of a large message's verification, done on the offload
 *   worker (default `OFFLOAD_BUDGET_MS`); past it every signature is `neutral` with `overBudget`
 *   set. The keys were looked up before the budget starts and the worker's lookups are answered
 *   from memory, so the budget bounds the canonicalization, hashing and RSA alone, never DNS.
 * @param options.timer the clock of that budget (default: offload.ts `timeoutBudget`).
 * @returns one entry per signature of `keysOf` mailauth could read, in field order (the others are
 *   not shown to mailauth: dkim-fields.ts `withoutOtherSignatures`); an empty list for an unsigned
 *   message. When mailauth itself fails, every signature of `keysOf` is returned with status
 *   `temperror` and the error in `info`. Never throws.
 */
export async function verifyDkimLocally(
  raw: Buffer,
  keysOf: readonly DkimSignatureInfo[],
  resolver: DnsResolver,
  options: { timeoutMs?: number; now?: Date; budgetMs?: number; timer?: BudgetTimer } = {},
): Promise<LocalDkimResult[]> {
  const answered = await prefetchKeys(keysOf, resolver, options.timeoutMs ?? 10_000);
  const wanted = new Set(keysOf.map((s) => s.b));
  const ours = (results: LocalDkimResult[]): LocalDkimResult[] => results.filter((r) => wanted.has(r.b));
  // The other signatures are not shown to mailauth at all (no body hash for them either), unless a
  // signature of keysOf signs DKIM-Signature fields (dkim-fields.ts).
  const read = withoutOtherSignatures(raw, keysOf);
  if (read.length < OFFLOAD_MIN_BYTES) return ours(await verifyDkimHere(read, answered, options));
  // A large body is canonicalized and hashed on the worker thread (offload.ts), within a time
  // budget: its keys are at hand before the budget starts, and it asks for no other.
  try {
    const jobOptions = { ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}), ...(options.now ? { now: options.now.getTime() } : {}) };
    return ours((await offload('dkim', read, { resolver: answered, options: jobOptions, ...(options.budgetMs !== undefined ? { budgetMs: options.budgetMs } : {}), ...(options.timer ? { timer: options.timer } : {}) })) as LocalDkimResult[]);
  } catch (err) {
    const over = err instanceof BudgetError;
    const why = over ? `local DKIM verification ${err.message}` : `local DKIM verification failed: ${(err as Error).message}`;
    return keysOf.map((o) => ({ d: o.d, s: o.s, b: o.b, status: over ? 'neutral' : 'temperror', bodyLengthLimited: o.bodyLengthLimited, info: why, ...(over ? { overBudget: true as const } : {}) }));
  }
}

/** A lookup's name as the prefetch cache keys it: DNS names compare case-insensitively, a trailing dot changes nothing. */
const lookupKey = (name: string, rrtype: string): string => `${name.toLowerCase().replace(/\.$/, '')} ${rrtype.toUpperCase()}`;

/**
 * A key record name written in LDH labels (letters, digits, hyphens, underscores; RFC 6376 §3.1
 * selectors are sub-domains, §3.5 d= a domain name): spelled the same by every reader, since
 * mailauth converts only labels with non-ASCII characters (its `toALabel`, RFC 8616 §3) and takes
 * an ASCII name as written. Anything else (a U-label, whitespace left in a tag) is not looked up.
 */
const PLAIN_NAME = /^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*$/;

/** The error a name not looked up gives mailauth: `ENOTFOUND`, which it reports as a missing key (PERMFAIL, RFC 6376 §6.1.2). */
function notLookedUp(name: string): Error {
  return Object.assign(new Error(`${name} was not looked up: not the key of a signature that can stand for an agent`), { code: 'ENOTFOUND' });
}

/**
 * Looks up the key record (`<s>._domainkey.<d>` TXT, RFC 6376 §3.6.2.1) of every signature of
 * `keysOf` whose name is {@link PLAIN_NAME} — at most {@link MAX_PREFETCHED_KEYS} distinct names,
 * all at once, each within `timeoutMs` — and returns a resolver that answers those names from what
 * came back (an answer, or the same error: a lookup that timed out stays a `temperror`) and fails
 * any other name at once ({@link notLookedUp}); it never asks `resolver` again. An RSA key over
 * 4096 bits or with a public exponent other than 3 or 65537 comes back as an invalid key
 * ({@link unusualRsaKey}). Never throws.
 */
async function prefetchKeys(keysOf: readonly DkimSignatureInfo[], resolver: DnsResolver, timeoutMs: number): Promise<DnsResolver> {
  const names = new Map<string, string>();
  for (const sig of keysOf) {
    const name = `${sig.s}._domainkey.${sig.d}`;
    if (PLAIN_NAME.test(name) && names.size < MAX_PREFETCHED_KEYS) names.set(lookupKey(name, 'TXT'), name);
  }
  const settled = await Promise.allSettled(
    [...names.values()].map((name) =>
      withTimeout(Promise.resolve().then(() => resolver(name, 'TXT')), timeoutMs, `${name} TXT`).then((answer) => {
        const unusual = unusualRsaKey(answer);
        if (unusual) throw Object.assign(new Error(`the key at ${name} ${unusual}`), { code: 'EINVALIDVAL' });
        return answer;
      }),
    ),
  );
  const answers = new Map([...names.keys()].map((key, i) => [key, settled[i]!] as const));
  return (name, rrtype) => {
    const a = answers.get(lookupKey(name, rrtype));
    if (!a) return Promise.reject(notLookedUp(name));
    return a.status === 'fulfilled' ? Promise.resolve(a.value) : Promise.reject(a.reason as Error);
  };
}

/**
 * Why a key record's RSA key is not verified with, or null: over 4096 bits (RFC 8301 §3.2 has
 * verifiers validate 1024 to 4096 bits) or a public exponent other than 3 or 65537 (a huge one makes
 * each verification over a hundred times dearer). A record that is not an RSA key, or that cannot
 * be read, is left to mailauth's own checks.
 */
function unusualRsaKey(answer: unknown): string | null {
  if (!Array.isArray(answer)) return null;
  const rr = ([] as unknown[]).concat(answer[0] ?? []).join('').replace(/\s+/g, '');
  const p = /(?:^|;)p=([A-Za-z0-9+/=]+)(?:;|$)/.exec(rr)?.[1];
  if (!p) return null;
  const der = Buffer.from(p, 'base64');
  const { createPublicKey } = process.getBuiltinModule('node:crypto');
  for (const type of ['spki', 'pkcs1'] as const) {
    let details: import('node:crypto').AsymmetricKeyDetails | undefined;
    let keyType: string | undefined;
    try {
      const key = createPublicKey({ key: der, format: 'der', type });
      details = key.asymmetricKeyDetails;
      keyType = key.asymmetricKeyType;
    } catch {
      continue;
    }
    if (keyType !== 'rsa' || !details) return null;
    if ((details.modulusLength ?? 0) > 4096) return `is an RSA key of ${details.modulusLength} bits (RFC 8301 §3.2: at most 4096 are verified)`;
    const e = details.publicExponent;
    if (e !== undefined && e !== 3n && e !== 65537n) return 'has an RSA public exponent other than 3 or 65537';
    return null;
  }
  return null;
}

/**
 * The most key records looked up for one message: gate 3 refuses more DKIM-Signature fields than
 * this (uplink/gates.ts `MAX_DKIM_SIGNATURES`), so a message judged further never has more.
 */
const MAX_PREFETCHED_KEYS = 8;

/** {@link verifyDkimLocally} on this thread, whatever the size (the offload worker runs this). Never throws. */
export async function verifyDkimHere(raw: Buffer, resolver: DnsResolver, options: { timeoutMs?: number; now?: Date } = {}): Promise<LocalDkimResult[]> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  let ours: DkimSignatureInfo[] = [];
  try {
    ours = parseDkimSignatures(parseHeaders(raw));
    const guarded: DnsResolver = (name, rrtype) => withTimeout(Promise.resolve().then(() => resolver(name, rrtype)), timeoutMs, `${name} ${rrtype}`);
    // mailauth is loaded by the first verification, not at start (memory and start-up: bench/RESULTS.md, machine-limit).
    const { dkimVerify } = await import('mailauth');
    const verified = await dkimVerify(raw, { resolver: guarded as DNSResolver, rejectRsaSha1: true, ...(options.now ? { curTime: options.now } : {}) });
    const results: MailauthDkimResult[] = verified.results;
    return results
      .filter((r) => typeof r.signingDomain === 'string' && r.signingDomain !== '')
      .map((r) => {
        const b = (r.signature ?? '').replace(/\s+/g, '');
        return {
          d: (r.signingDomain ?? '').toLowerCase().replace(/\.$/, ''),
          s: r.selector ?? '',
          b,
          status: r.status?.result ?? 'temperror',
          bodyLengthLimited: (r.status?.underSized ?? 0) > 0 || ours.some((o) => o.b === b && o.bodyLengthLimited),
          info: r.info ?? '',
        };
      });
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return ours.map((o) => ({ d: o.d, s: o.s, b: o.b, status: 'temperror', bodyLengthLimited: o.bodyLengthLimited, info: `local DKIM verification failed: ${why}` }));
  }
}
