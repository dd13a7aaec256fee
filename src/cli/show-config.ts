import { stringify } from 'smol-toml';
import { effectiveConfig, loadConfig } from '../config/config.js';
import { printJson } from './format.js';

/**
 * `a2a-mailbridge config [--json]`: the config in effect — every key the loader reads, with the
 * file's value or the default, as TOML (or JSON). Paths are absolute, `listen` is the address
 * bound (`localhost` shows as 127.0.0.1), times are in the file's units (seconds; `check_wait_ms`
 * in ms). Secrets appear only as the `*_file` paths that hold them: the files are not even read,
 * so this works before they are in place (`doctor` checks them).
 *
 * @returns the exit code (0)
 * @throws ConfigError when the config does not load
 */
export function runConfig(configFile: string, o: { json?: boolean }): number {
  const config = loadConfig(configFile, { skipSecrets: true });
  const effective = effectiveConfig(config)!;
  if (o.json) {
    printJson(effective);
    return 0;
  }
  const header = [
    `# The config in effect, from ${config.file}: every key with its value or default.`,
    '# Paths are absolute; secrets are shown as the files that hold them (not read here: doctor checks them).',
    '',
    '',
  ].join('\n');
  process.stdout.write(header + stringify(effective));
  return 0;
}
