import { commandLine } from '../config/config-path.js';
import { nearestKey } from '../config/fields.js';

/**
 * What a command says of an agent name the config does not have: the config's agents, the nearest
 * of them when one is near (config/fields.ts `nearestKey`, as a mistyped key is answered), and the
 * command that shows the config. One text for `cancel --agent` and `secret new --agent`.
 * @param names the config's agent names
 */
export function noAgentText(agent: string, names: readonly string[], configFile: string): string {
  const near = nearestKey(agent, names);
  const has = names.length === 0 ? 'which has none' : `which has ${names.join(', ')}`;
  return `no agent ${agent} in the config, ${has}${near === undefined ? '' : ` (did you mean "${near}"?)`}; see ${commandLine(configFile, 'config')}`;
}
