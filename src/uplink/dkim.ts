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
}

/** A mailauth result as it comes at run time: its declarations omit `info` (the A-R style line). */
type MailauthDkimResult = DKIMResult & { info?: string };

/**
 * Verifies every DKIM-Signature of the message with mailauth, looking keys up through `resolver`
 * (each lookup bounded by `options.timeoutMs`, default 10000 ms, then `temperror`). The keys of
 * every signature, whatever the message's size, are looked up all at once before mailauth runs
 * (`prefetchKeys`), so DNS that does not answer costs one timeout, not one per signature.
 *
 * @param options.now the time for `t=`/`x=` checks (default: now).
 * @param options.budgetMs the time budget of a large message's verification, done on the offload
 *   worker (default `OFFLOAD_BUDGET_MS`); past it every signature is `neutral`, with the budget in
 *   `info`. Its keys are looked up before the budget starts (all at once, each within `timeoutMs`),
 *   so DNS that does not answer gives `temperror`, whatever the message's size.
 * @param options.timer the clock of that budget (default: offload.ts `timeoutBudget`).
 * @returns one entry per signature mailauth could read, in field order; an empty list for an
 *   unsigned message. When mailauth itself fails, every signature we can parse is returned with
 *   status `temperror` and the error in `info`. Never throws.
 */
export async function verifyDkimLocally(raw: Buffer, resolver: DnsResolver, options: { timeoutMs?: number; now?: Date; budgetMs?: number; timer?: BudgetTimer } = {}): Promise<LocalDkimResult[]> {
  // Every key is looked up at once first: mailauth asks for them one after another, so DNS that
  // does not answer would cost one timeout per signature (docs/architecture.md, "The gates").
  const answered = await prefetchKeys(raw, resolver, options.timeoutMs ?? 10_000);
  if (raw.length < OFFLOAD_MIN_BYTES) return verifyDkimHere(raw, answered, options);
  // A large body is canonicalized and hashed on the worker thread (offload.ts), within a time
  // budget that is CPU time only: its keys are at hand before the budget starts.
  try {
    const jobOptions = { ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}), ...(options.now ? { now: options.now.getTime() } : {}) };
    return (await offload('dkim', raw, { resolver: answered, options: jobOptions, ...(options.budgetMs !== undefined ? { budgetMs: options.budgetMs } : {}), ...(options.timer ? { timer: options.timer } : {}) })) as LocalDkimResult[];
  } catch (err) {
    const why = err instanceof BudgetError ? `local DKIM verification ${err.message}` : `local DKIM verification failed: ${(err as Error).message}`;
    const status = err instanceof BudgetError ? 'neutral' : 'temperror';
    return parseDkimSignatures(parseHeaders(raw)).map((o) => ({ d: o.d, s: o.s, b: o.b, status, bodyLengthLimited: o.bodyLengthLimited, info: why }));
  }
}

/** A lookup's name as the prefetch cache keys it: DNS names compare case-insensitively, a trailing dot changes nothing. */
const lookupKey = (name: string, rrtype: string): string => `${name.toLowerCase().replace(/\.$/, '')} ${rrtype.toUpperCase()}`;

/**
 * Looks up the key record (`<s>._domainkey.<d>` TXT, RFC 6376 §3.6.2.1) of every DKIM signature of
 * the message — at most {@link MAX_PREFETCHED_KEYS} distinct names, all at once, each within
 * `timeoutMs` — and returns a resolver that answers those names from what came back (an answer,
 * or the same error: a lookup that timed out stays a `temperror`) and any other name by asking
 * `resolver`. mailauth asks for the keys one after another, 5 s each when DNS does not answer: so a
 * message's verification starts with its keys at hand — a small one waits one timeout, not one per
 * signature; a large one's time budget on the worker bounds the canonicalization and hashing, not
 * a name server's silence. Never throws.
 */
async function prefetchKeys(raw: Buffer, resolver: DnsResolver, timeoutMs: number): Promise<DnsResolver> {
  const names = new Map<string, string>();
  for (const sig of parseDkimSignatures(parseHeaders(raw))) {
    const written = `${sig.s}._domainkey.${sig.d}`;
    // mailauth asks for the A-labels of a name with U-labels (RFC 8616 §3); node:url converts them.
    const name = Buffer.byteLength(written) !== written.length ? process.getBuiltinModule('node:url').domainToASCII(written) : written;
    if (name !== '' && names.size < MAX_PREFETCHED_KEYS) names.set(lookupKey(name, 'TXT'), name);
  }
  const settled = await Promise.allSettled([...names.values()].map((name) => withTimeout(Promise.resolve().then(() => resolver(name, 'TXT')), timeoutMs, `${name} TXT`)));
  const answers = new Map([...names.keys()].map((key, i) => [key, settled[i]!] as const));
  return (name, rrtype) => {
    const a = answers.get(lookupKey(name, rrtype));
    if (!a) return resolver(name, rrtype);
    return a.status === 'fulfilled' ? Promise.resolve(a.value) : Promise.reject(a.reason as Error);
  };
}

/**
 * The most key records looked up ahead of a message's verification: gate 3 refuses more
 * DKIM-Signature fields than this (uplink/gates.ts `MAX_DKIM_SIGNATURES`), so a message judged
 * further never has more; the rest of a longer list is looked up by the verifier as it goes.
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
