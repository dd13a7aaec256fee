/** The Hermes `a2a_agents` entry doctor prints (README, "Register it in Hermes"). */
import type { Config } from '../config/config.js';
import { commandLine } from '../config/config-path.js';

/** The Hermes `a2a_agents` entry to paste, with a placeholder where the facade's bearer goes. */
export interface HermesSnippet {
  yaml: string;
  /**
   * Each agent's URL; null while it cannot be known: server.listen has port 0 and this config's
   * bridge is not running (the port is picked when serve starts; the yaml says how to find it).
   */
  agents: { name: string; url: string | null }[];
  /** The file holding the bearer (its content is never printed). */
  tokenFile: string;
}

/**
 * The `a2a_agents` entries for Hermes' config.yaml: the exact loopback URL of each agent, a
 * placeholder for the bearer, and a timeout of Hermes' default 120 s, or `server.caller_timeout_s`
 * when that is longer (the bridge answers within the shortest caller timeout it is told of).
 * With port 0 in server.listen (a free port picked at each start) the URLs are at `livePort`, the
 * port this config's running bridge listens at (its store's claim notes it: src/cli/health-probe.ts),
 * under a comment saying it changes at the next start; with no live port, no URL is given (never
 * one at :0): a `<port>` placeholder, under a comment saying how to find the port.
 * @param livePort 1–65535, or null when this config's bridge is not known to run (ignored unless port 0)
 */
export function hermesSnippet(config: Config, tokenFile: string, livePort: number | null = null): HermesSnippet {
  const { host, port } = config.server;
  const timeoutS = Math.max(120, Math.ceil((config.server.callerTimeoutMs ?? 0) / 1000));
  const shownPort = port !== 0 ? String(port) : livePort !== null ? String(livePort) : '<port>';
  const base = `http://${host.includes(':') ? `[${host}]` : host}:${shownPort}`;
  const known = port !== 0 || livePort !== null;
  const agents = config.agents.map((a) => ({ name: a.name, url: known ? `${base}/agents/${a.name}` : null }));
  const token = `<token from ${tokenFile}>`.replaceAll('\\', '\\\\').replaceAll('"', '\\"');
  const lines = ['a2a_agents:'];
  for (const a of config.agents) lines.push(`  ${a.name}:`, `    url: ${base}/agents/${a.name}`, `    auth: {type: bearer, token: "${token}"}`, `    timeout: ${timeoutS}`);
  if (port === 0 && livePort !== null) {
    lines.unshift(
      `# server.listen has port 0: ${livePort} is the port this config's running bridge picked when it started.`,
      '# It changes at each start: set a fixed port in server.listen so these URLs stay right.',
    );
  } else if (port === 0) {
    lines.unshift(
      "# server.listen has port 0: serve picks a free port each time it starts, and this config's",
      '# bridge is not running, so there is no URL yet (<port> below). To learn the port, start it:',
      `#   ${commandLine(config.file, 'serve')}`,
      '# then run doctor again, which prints the URLs with the live port (status names it too:',
      '# "bridge answering at …"):',
      `#   ${commandLine(config.file, 'doctor')}`,
      '# Or set a fixed port in server.listen.',
    );
  }
  return { yaml: lines.join('\n'), agents, tokenFile };
}
