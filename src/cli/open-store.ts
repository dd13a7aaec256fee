import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadConfig } from '../config/config.js';
import { commandLine, shellWord } from '../config/config-path.js';
import { Store, StoreError, storeWasHere } from '../store/store.js';

/** Where a command finds the store: `--db`, else `store.path` of the config file. */
export interface StoreLocation {
  /** `--db <file>`: a store file (a backup, say), no config needed. */
  db?: string;
  /** The config file, as `configPath()` resolved it. */
  configFile: string;
}

/**
 * The store file's absolute path.
 * @throws ConfigError when the config is needed and does not load
 */
export function storeFile(where: StoreLocation): string {
  // Only store.path is needed: the secret files are not read (they may not be in place yet).
  return where.db !== undefined ? resolve(where.db) : loadConfig(where.configFile, { skipSecrets: true }).store.path;
}

/**
 * The names of the config's agents, in its order; with `--db`, those of the config if it loads
 * (a backup read beside it), else undefined (no config is needed with `--db`).
 * @throws ConfigError without `--db`, when the config does not load
 */
export function configuredAgents(where: StoreLocation): string[] | undefined {
  const names = (): string[] => loadConfig(where.configFile, { skipSecrets: true }).agents.map((a) => a.name);
  if (where.db === undefined) return names();
  try {
    return names();
  } catch {
    return undefined;
  }
}

/**
 * What to say of a store file that is not there though a serve has run on it (its claim lock is
 * there: src/store/serve-claim.ts `storeWasHere`, which the caller asks): it was moved or deleted,
 * and the next `serve` would start an empty one (fresh-user trial: after `mv` of the store file,
 * `status` said "serve creates it on its first start", and the restart began an empty store, the
 * tasks out of sight).
 * @param file the store file's absolute path
 * @param serve the `serve` command line of this config
 */
export function goneStoreText(file: string, serve: string): string {
  return `no store at ${file}, though a serve has run on it (its claim lock is there): it was moved or deleted; put it back (or restore a backup: a2a-mailbridge backup made one) before \`${serve}\`, which would start an empty store`;
}

/**
 * Refuses a store file that does not exist (yet), before anything would create it.
 * @param file the store file's absolute path ({@link storeFile})
 * @throws StoreError naming the file, where its path comes from, and what creates it
 */
export function requireStoreFile(file: string, where: StoreLocation): void {
  if (existsSync(file)) return;
  if (where.db !== undefined) throw new StoreError(`no store at ${file} (--db); name a store file that exists (a backup, or store.path of a config)`);
  const serve = commandLine(where.configFile, 'serve');
  if (storeWasHere(file)) throw new StoreError(`${goneStoreText(file, serve)} (config key store.path)`);
  throw new StoreError(`no store at ${file} (config key store.path); \`${serve}\` creates it on its first start`);
}

/**
 * Opens the store read-only (inspection never takes a write lock from a running bridge), after
 * the schema version check of `Store.open`; no whole-file check, so a read command costs the same
 * whatever the store's size (`doctor` and `backup` run quick_check).
 * @throws ConfigError, StoreError (no such file, damaged, another schema version)
 */
export function openReadOnly(where: StoreLocation): Store {
  const file = storeFile(where);
  requireStoreFile(file, where);
  return Store.open(file, { readOnly: true, ...(where.db === undefined ? { configFile: where.configFile } : {}) });
}

/**
 * The command line a read command's message suggests for the same store: with the `--db` given,
 * else with the config's `--config` (src/config/config-path.ts).
 * @param args the subcommand and its arguments (`tasks`, `ledger --raw 42`); `redirect`, if any, follows the `--db`
 */
export function storeCommand(where: StoreLocation, args: string, redirect = ''): string {
  const line = where.db !== undefined ? `a2a-mailbridge ${args} --db ${shellWord(resolve(where.db))}` : commandLine(where.configFile, args);
  return redirect === '' ? line : `${line} ${redirect}`;
}
