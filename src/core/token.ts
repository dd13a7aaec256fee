import { randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Reply tokens are 32 lowercase hex characters (128 bits from the CSPRNG), one per dispatch
 * (docs/architecture.md, "The reply format").
 */
export const TOKEN_RE = /^[0-9a-f]{32}$/;

export function mintToken(): string {
  return randomBytes(16).toString('hex');
}

/**
 * Compares a presented token with the live one in constant time. A presented value of another
 * length, or a null live token (used, revoked), is unequal; the length check comes before
 * `timingSafeEqual` because it throws on unequal lengths (and a length leaks nothing here: every
 * live token has the same length).
 */
export function tokensEqual(presented: string, live: string | null): boolean {
  if (live === null) return false;
  const a = Buffer.from(presented, 'utf8');
  const b = Buffer.from(live, 'utf8');
  if (a.length !== b.length) return false;
  return timingSafeEqual(a, b);
}
