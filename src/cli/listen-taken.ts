import { commandLine } from '../config/config-path.js';
import { loadConfig, type Config } from '../config/config.js';
import { probeHealth, type HealthProbe } from './health-probe.js';

/**
 * What holds a taken `server.listen`, as `doctor`'s `listen` check and `status` tell it from the
 * claim of this config's store and the answer to `/health` (src/cli/health-probe.ts): `ours`, this
 * config's own bridge (its /health names this config's store, or the claim of its store names this
 * config file and address); otherwise `text` says what it is.
 */
export function listenTaker(probe: HealthProbe): { ours: boolean; text: string } {
  if (probe.up && (probe.sameStore === true || probe.ownServe !== null)) {
    return { ours: true, text: `this config's bridge, which is running${probe.holderPid !== null ? ` (pid ${probe.holderPid})` : ''}` };
  }
  if (!probe.up) return { ours: false, text: 'another program (no a2a-mailbridge answers /health there)' };
  if (probe.sameStore === false) return { ours: false, text: "a bridge of another config (its /health names another store, or none to this config's server.bearer)" };
  return { ours: false, text: `an a2a-mailbridge that may not be this config's (${probe.why ?? 'it does not say which store it serves'})` };
}

/**
 * The line `serve` exits with when `server.listen` is taken (EADDRINUSE), saying by what when it
 * can tell ({@link listenTaker}): this config's bridge → its `stop` command; anything else → stop
 * that, or change `server.listen` in this config file. When the config cannot be read again (it
 * changed since), the line says both and names `status`, which tells.
 *
 * @param at `host:port` as the bind error names it
 * @returns one line, with its line break; never throws
 */
export async function listenTakenLine(configFile: string, at: string): Promise<string> {
  let config: Config;
  try {
    config = loadConfig(configFile, { skipSecrets: true });
  } catch {
    return `a2a-mailbridge: ${at} is already in use, by another program or another bridge (${commandLine(configFile, 'status')} tells which): stop it or change server.listen in ${configFile}\n`;
  }
  const taker = listenTaker(await probeHealth(config));
  if (taker.ours) return `a2a-mailbridge: ${at} is already in use by ${taker.text}: stop it first (${commandLine(configFile, 'stop')}), or leave it running\n`;
  return `a2a-mailbridge: ${at} is already in use by ${taker.text}: stop it, or change server.listen in ${configFile} to a free port\n`;
}
