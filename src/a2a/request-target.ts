/**
 * The path of a request target (RFC 9112 §3.2.1, origin-form), read without building a `URL` on
 * every call: a target made only of unreserved characters (RFC 3986 §2.3) in slash-led segments,
 * none of them a dot segment (`.`, `..`: RFC 3986 §5.2.4) and no `//` at its start, is already
 * what `new URL(target, base).pathname` gives (WHATWG URL: nothing to percent-encode, nothing to
 * remove); any other target goes through `new URL`, so both agree on every input.
 */

/** Slash-led segments of unreserved characters, none of them `.` or `..`; not starting with `//`. */
const PLAIN_PATH = /^(?!\/\/)(?:\/(?!\.\.?(?:\/|$))[\w.~-]*)+$/;

/** The base a request target is resolved against (only its path is ever read). */
const BASE = 'http://127.0.0.1';

/**
 * `new URL(target, 'http://127.0.0.1').pathname`, without the `URL` for a plain target.
 * @param target the request target as received (`req.url`); '' or undefined read as `/`
 * @returns null for a target the URL parser refuses (e.g. `http://[::1/x`, which node:http lets through)
 */
export function pathOf(target: string | undefined): string | null {
  if (!target) return '/';
  const q = target.indexOf('?');
  const path = q === -1 ? target : target.slice(0, q);
  if (PLAIN_PATH.test(path)) return path;
  try {
    return new URL(target, BASE).pathname;
  } catch {
    return null;
  }
}

/** A target in absolute-form: a scheme, then `//` and an authority (RFC 9112 §3.2.2). */
const ABSOLUTE_FORM = /^[a-z][a-z\d+.-]*:\/\//i;

/**
 * The host (and port) of an absolute-form target, which stands in for the Host header (RFC 9112
 * §3.2.2: the server must use it and ignore Host); null for any other target.
 * @param target the request target as received, one {@link pathOf} read (so the URL parser takes it)
 */
export function targetAuthority(target: string | undefined): string | null {
  return target && ABSOLUTE_FORM.test(target) ? new URL(target).host : null;
}

/** The whole target as a `URL` (its query: the HTTP+JSON routes, the card's `A2A-Version` parameter). */
export function urlOf(target: string | undefined): URL {
  return new URL(target || '/', BASE);
}
