import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * The config file: `--config`, else `$A2A_MAILBRIDGE_CONFIG`, else
 * `$XDG_CONFIG_HOME/a2a-mailbridge/config.toml` (`~/.config/…` when XDG_CONFIG_HOME is unset).
 */
export function configPath(flag: string | undefined): string {
  if (flag) return flag;
  if (process.env.A2A_MAILBRIDGE_CONFIG) return process.env.A2A_MAILBRIDGE_CONFIG;
  const base = process.env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'a2a-mailbridge', 'config.toml');
}
