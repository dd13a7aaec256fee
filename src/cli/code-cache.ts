/**
 * How `serve` reaches the code cache of the CLI's bundle that the process entry keeps
 * (src/cli/entry.ts): the entry and the bundle share no module, so the entry leaves its writer on
 * `globalThis` under a registered symbol.
 */

/** The key of the writer on `globalThis`. */
export const CODE_CACHE_HOOK = Symbol.for('a2a-mailbridge.code-cache');

/** Writes the code cache when it is missing or V8 refused it; true when it wrote one. Never throws. */
export type CodeCacheWriter = () => boolean;

/**
 * Writes the code cache of the bundle now, when the process started through the entry with a cache
 * folder and has none V8 accepted. Called by `serve` once started, so the cache holds every
 * function a start runs.
 * @returns true when a cache file was written
 */
export function saveStartCodeCache(): boolean {
  const writer = (globalThis as Record<symbol, unknown>)[CODE_CACHE_HOOK] as CodeCacheWriter | undefined;
  return writer?.() ?? false;
}
