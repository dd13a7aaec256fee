import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * A short name of a store file that holds no path and nothing secret, for `GET /health` (served
 * without auth): the first 16 hex digits (64 bits) of SHA-256 over `a2a-mailbridge store\n` and
 * the file's real path (symlinks resolved; a file that does not exist yet: its absolute path as
 * given). `status` compares the one a bridge's /health names with its own config's, so a bridge
 * started with another config (another store) on the same `server.listen` is told apart from
 * this config's (README, "Operate"). Anyone who guesses the path can confirm the guess, no more.
 *
 * @param path `store.path` of the config (absolute, as the loader resolves it)
 * @returns 16 lowercase hex digits; never throws
 */
export function storeFingerprint(path: string): string {
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    real = resolve(path);
  }
  return createHash('sha256').update(`a2a-mailbridge store\n${real}`).digest('hex').slice(0, 16);
}
