import { probeListen } from '../a2a/listen-probe.js';
import type { Config } from '../config/config.js';
import type { Check } from './doctor.js';
import { probeHealth } from './health-probe.js';
import { listenTaker } from './listen-taken.js';
import { restartCommands } from './status.js';

/**
 * The `listen` check of doctor: whether `server.listen` can be bound now (bound and closed at once,
 * on that loopback address only: src/a2a/listen-probe.ts). A taken address is `ok` only when this
 * config's own bridge answers there (its /health names this config's store fingerprint, as `status`
 * tells: src/cli/health-probe.ts); a `warn` when it is this config's bridge by its store's claim
 * but started with another server.bearer than the one read now (replaced, or unreadable); taken by anything else, `serve` would fail to start, so doctor
 * fails. Port 0 is not bound (a new free port at each start); the detail names the port this
 * config's bridge listens at when it runs (the one its store's claim notes, as `status` finds it).
 */
export async function checkListen(config: Config): Promise<Check> {
  const name = 'listen';
  const { host, port } = config.server;
  const at = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  if (port === 0) return (await checkListenAndPort(config)).check;
  try {
    await probeListen(host, port);
    return { name, status: 'ok', detail: `${at} is free: serve can listen there` };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    const key = `server.listen in ${config.file}`;
    if (code !== 'EADDRINUSE') return { name, status: 'fail', detail: `${at} cannot be bound (${code})`, fix: `set ${key} to a loopback address and a port above 1023 that you may bind` };
    const probe = await probeHealth(config);
    if (probe.up && probe.sameStore === true) return { name, status: 'ok', detail: `${at} is taken by this config's bridge, which is running (its /health names this config's store)` };
    if (probe.up && probe.ownServe !== null) {
      // This config's bridge by its store's claim (src/cli/health-probe.ts), started with another bearer than the one read now.
      const restart = restartCommands(config.file);
      const own = `${at} is taken by this config's bridge (pid ${probe.ownServe.pid}, by the claim of ${config.store.path})`;
      if (probe.sameStore === null) return { name, status: 'warn', detail: `${own}; this config's server.bearer cannot be read now (${probe.why})`, fix: `put the bearer file back; the bridge keeps the bearer it read at its start until you restart it: ${restart}` };
      return { name, status: 'warn', detail: `${own}, running with an outdated server.bearer: the bearer was replaced since it started`, fix: `restart it so it reads the new bearer: ${restart}` };
    }
    const taker = listenTaker(probe).text;
    return { name, status: 'fail', detail: `${at} is already in use by ${taker}: serve would fail to start`, fix: `stop what listens there, or set ${key} to a free port` };
  }
}

/**
 * {@link checkListen}, and with port 0 in server.listen the port this config's running bridge
 * listens at (the one its store's claim notes, when its /health names this config's store), for
 * the Hermes snippet's URLs (src/cli/hermes-snippet.ts).
 * @returns livePort 1–65535, or null: a fixed port in server.listen, or port 0 with this config's bridge not running
 */
export async function checkListenAndPort(config: Config): Promise<{ check: Check; livePort: number | null }> {
  const { host, port } = config.server;
  if (port !== 0) return { check: await checkListen(config), livePort: null };
  const at = host.includes(':') ? `[${host}]:0` : `${host}:0`;
  const probe = await probeHealth(config);
  const running = probe.up && probe.sameStore === true;
  const check: Check = { name: 'listen', status: 'ok', detail: `${at}: port 0, a free port is picked at each start${running ? `; this config's bridge is running at ${probe.url.replace(/\/health$/, '')}` : ''}` };
  return { check, livePort: running ? Number(new URL(probe.url).port) : null };
}
