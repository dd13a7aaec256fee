import { createHmac } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

/**
 * A short name of a store file that reveals nothing to whoever lacks the facade's bearer, for
 * `GET /health` (served without auth): the first 16 hex digits (64 bits) of HMAC-SHA256 (RFC 2104)
 * keyed with `server.bearer` over `a2a-mailbridge store\n` and the file's real path (symlinks
 * resolved; where it does not exist: that of its deepest existing folder, and the rest as given). `status` computes it from
 * its own config (the same bearer, the same store.path) and compares it with the one a bridge's
 * /health names, so a bridge started with another config (another store or another bearer) on the
 * same `server.listen` is told apart from this config's (README, "Operate"). Without the key, a
 * dictionary of likely paths confirms none of them (an unkeyed hash of the path did).
 *
 * @param path `store.path` of the config (absolute, as the loader resolves it)
 * @param bearer `server.bearer` of the config: the HMAC key
 * @returns 16 lowercase hex digits; never throws
 */
export function storeFingerprint(path: string, bearer: string): string {
  return createHmac('sha256', bearer).update(`a2a-mailbridge store\n${realPath(path)}`).digest('hex').slice(0, 16);
}

/**
 * `path` with symlinks resolved as far as it exists: the real path of its deepest existing folder
 * and the rest as given. A store folder moved away while the bridge runs (README,
 * "Troubleshooting") is then named as the bridge named it at its start, where a folder above it is
 * a symlink too (macOS's /tmp, /var).
 */
function realPath(path: string): string {
  const abs = resolve(path);
  try {
    return realpathSync(abs);
  } catch {
    const parent = dirname(abs);
    return parent === abs ? abs : join(realPath(parent), basename(abs));
  }
}