import type { LookupAddress } from 'node:dns';
import { createRequire } from 'node:module';
import { isIP, type LookupFunction } from 'node:net';
import type { Dispatcher } from 'undici';

// undici is loaded by the first push notification, not at start (as in deliver.ts).
const require = createRequire(import.meta.url);

/**
 * Where a push notification may go (docs/push.md). A push URL is the caller's: POSTed to blindly it
 * would let anyone who can call the bridge make it send requests into the network it sits in
 * (request forgery). So by default a push URL must name a loopback host — an IP literal in
 * 127.0.0.0/8 or ::1, or a name — and every address a name resolves to is checked when the
 * connection is made, so a name that resolves elsewhere (or is rebound between two lookups) is
 * refused, not followed. `server.push_allow_hosts` names the other hosts an operator allows.
 */

/**
 * True for 127.0.0.0/8, ::1 and the IPv4-mapped ::ffff:127.x.y.z (RFC 4291 §2.5.5.2), in the
 * dotted form a resolver gives and the hex form the WHATWG URL parser writes (`::ffff:7f00:1`).
 */
export function isLoopbackAddress(address: string): boolean {
  const a = address.toLowerCase();
  if (isIP(a) === 4) return a.startsWith('127.');
  if (a === '::1' || a === '0:0:0:0:0:0:0:1') return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return mapped[1]!.startsWith('127.');
  const hex = /^::ffff:([0-9a-f]{1,4}):[0-9a-f]{1,4}$/.exec(a);
  return hex !== null && parseInt(hex[1]!, 16) >> 8 === 127;
}

/** The URL's host as compared with the allow list: lower-case, IPv6 without brackets. */
function hostOf(url: URL): string {
  return url.hostname.toLowerCase().replace(/^\[|\]$/g, '');
}

/**
 * Why a push URL may not be used, or null when it may: http(s) only, no credentials in the URL,
 * and a loopback host unless `allowHosts` names it. A name is only checked here for its form; its
 * addresses are checked when it is connected to ({@link pushDispatcher}).
 */
export function pushUrlProblem(raw: string, allowHosts: readonly string[]): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http or https URL';
  if (url.username !== '' || url.password !== '') return 'must not carry credentials (use authentication)';
  const host = hostOf(url);
  if (allowHosts.includes(host)) return null;
  if (isIP(host) !== 0) return isLoopbackAddress(host) ? null : `names ${host}, which is not a loopback address; push notifications go to loopback unless server.push_allow_hosts lists the host`;
  if (host === 'localhost' || host.endsWith('.localhost')) return null;
  return `names ${host}: push notifications go to loopback hosts only unless server.push_allow_hosts lists the host`;
}

/**
 * A DNS lookup for net.connect that refuses a name resolving to any non-loopback address (unless
 * the name is allowed). It runs at connect time, so the address connected to is the one checked.
 */
function checkedLookup(allowHosts: readonly string[]): LookupFunction {
  return (hostname, options, callback) => {
    // node:dns by the first push connection, not at start (docs/architecture.md, "Start-up and memory").
    process.getBuiltinModule('node:dns').lookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const allowed = allowHosts.includes(hostname.toLowerCase());
      const bad = addresses.find((a) => !isLoopbackAddress(a.address));
      if (!allowed && bad) {
        const e = Object.assign(new Error(`push host ${hostname} resolves to ${bad.address}, which is not loopback`), { code: 'EPUSHNOTLOOPBACK' });
        return callback(e, '', 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
      callback(null, first.address, first.family);
    });
  };
}

/** The undici dispatcher for push POSTs: the checked lookup, the connect timeout, no keep-alive beyond 10 s. */
export function pushDispatcher(allowHosts: readonly string[], connectTimeoutMs: number): Dispatcher {
  const { Agent } = require('undici') as typeof import('undici');
  return new Agent({ connect: { timeout: connectTimeoutMs, lookup: checkedLookup(allowHosts) }, keepAliveTimeout: 10_000, pipelining: 0 });
}
