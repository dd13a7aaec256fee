/**
 * `a2a-mailbridge stop`: stops this config's running bridge the way Ctrl-C stops a foreground
 * `serve` — SIGTERM, after which serve closes its socket, lets work under way finish and closes
 * the store (src/cli/serve.ts) — and waits until the process is gone.
 */
import { loadConfig } from '../config/config.js';
import { commandLine } from '../config/config-path.js';
import { probeHealth, type HealthProbe } from './health-probe.js';
import { serviceMainPid, stopCommands } from './service-manage.js';
import { runsServe } from './serve-process.js';
import { defaultKind, SYSTEMD_UNIT, type ServiceKind } from './service.js';

/**
 * The exit codes of `stop`: 0 stopped; 1 not stopped (the bridge answering is another config's,
 * runs under the service manager, refused the signal, or did not exit within the wait); 3 this
 * config's bridge is not running (the connection to server.listen is refused, no serve holds the
 * claim of its store whatever answers there, or the process /health named had exited before the
 * signal; with port 0 in server.listen, the bridge is asked at the port the claim's holder noted:
 * src/cli/health-probe.ts), as `status` says 3;
 * 4 it cannot be told (server.listen has port 0 and the serve holding the store has noted no port
 * yet, /health did not answer in time or answered an HTTP error, server.bearer cannot be read, or
 * the bridge names no pid).
 */
export const STOP_EXIT = { stopped: 0, notStopped: 1, notRunning: 3, unknown: 4 } as const;

/** How long `stop` waits for the process to exit after SIGTERM, in ms: serve lets a webhook attempt or a mail check under way finish. */
export const STOP_WAIT_MS = 15_000;
const POLL_MS = 100;

/** Whether a process with this id exists (signal 0: no signal is sent; EPERM means it exists). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Resolves true once `pid` has exited, false when it still runs after `waitMs`. */
async function exited(pid: number, waitMs: number): Promise<boolean> {
  const until = Date.now() + waitMs;
  while (alive(pid)) {
    if (Date.now() >= until) return false;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return true;
}

export interface StopOptions {
  /** How long to wait for the exit (default {@link STOP_WAIT_MS}). */
  waitMs?: number;
  /** Which service manager to ask whether it runs the bridge (default: launchd on macOS, systemd elsewhere). */
  kind?: ServiceKind;
  /**
   * Test seam: sends `signal` to `pid` (default `process.kill`); throws as it does (ESRCH when
   * the process is gone), so the path of a bridge that exited between /health and the signal can
   * be driven.
   */
  kill?: (pid: number, signal: NodeJS.Signals) => void;
  /** Test seam: where the process command lines, descriptors and socket tables are read ({@link runsServe}, src/cli/listen-owner.ts; default `/proc`). */
  procRoot?: string;
}

/**
 * The one line `stop` prints (stdout) whenever it finds nothing to stop, on every path that finds
 * so: nothing answers at server.listen, or the bridge's process had exited by the signal (both exit
 * {@link STOP_EXIT}.notRunning). `why` is what shows it is not running.
 */
export function notRunningLine(why: string): string {
  return `this config's bridge is not running (${why}); nothing to stop\n`;
}

/**
 * Finds this config's bridge as `status` does (GET /health on server.listen with the bearer; the
 * store fingerprint must be this config's), learns its pid from that answer — or, when /health
 * names no store to the bearer read now (replaced since the bridge started, or unreadable), from
 * the claim of this config's store whose note names this config file and address
 * (src/cli/health-probe.ts `ClaimView`), checked by its command line ({@link runsServe}); or, when
 * no serve holds the claim at store.path, from the claim where its store folder was moved while it
 * runs, found from the socket listening at server.listen (src/cli/listen-owner.ts `claimAway`),
 * /health naming this config's store and the same pid — and unless the
 * service manager runs it (then it names the manager's command), sends SIGTERM and waits up to
 * `waitMs` for the process to exit. Prints one line on stdout (stopped, or not running) or stderr.
 *
 * @returns {@link STOP_EXIT}
 * @throws ConfigError (the config does not load)
 */
export async function runStop(configFile: string, o: StopOptions = {}): Promise<number> {
  const config = loadConfig(configFile, { skipSecrets: true });
  // Longer than status's wait: "not running" must not be said of a bridge slow to answer.
  const probe: HealthProbe = await probeHealth(config, undefined, o.procRoot);
  const at = probe.url.replace(/\/health$/, '');
  const serve = commandLine(configFile, 'serve');
  const fail = (line: string, code: number): number => {
    process.stderr.write(`a2a-mailbridge: ${line}\n`);
    return code;
  };
  if (!probe.up && probe.why === 'ECONNREFUSED') {
    process.stdout.write(notRunningLine(`nothing answers at ${at}: ${probe.why}`));
    return STOP_EXIT.notRunning;
  }
  // No claim at store.path, but this config's serve listens there with its claim where its store
  // folder was moved while it runs (src/cli/listen-owner.ts `claimAway`: the process holding the
  // listening socket holds that claim, whose note names it, this address and this config file),
  // and its /health names this config's store. Stopped by that pid when /health names the same.
  if (probe.up && probe.away !== null && probe.sameStore === true) {
    const { pid, store } = probe.away;
    const away = `its store was at ${store}, moved away from ${config.store.path} while it ran: move it back before you start it again`;
    if (probe.health.pid !== pid) {
      return fail(`the bridge at ${at} names pid ${String(probe.health.pid)}, but the process listening there and holding this config's moved claim is pid ${pid}; not stopped (stop it where it runs: Ctrl-C, or kill -TERM <its pid>)`, STOP_EXIT.unknown);
    }
    return signalAndWait(pid, { at, serve, before: away, o, fail, claimed: true });
  }
  // No serve holds this config's store (src/store/serve-claim.ts): its bridge is not running,
  // whatever answers at the address (another program, or another config's bridge).
  if (!probe.claimed) {
    // Port 0 names no address another program could take: probeHealth asked nothing.
    process.stdout.write(notRunningLine(`no serve holds its store ${config.store.path}${config.server.port === 0 ? '' : `; ${at} is taken by another program`}`));
    return STOP_EXIT.notRunning;
  }
  // Port 0, and the serve holding the store listens on another host: not this config's bridge.
  if (!probe.up && config.server.port === 0 && !probe.cannotTell) {
    process.stdout.write(notRunningLine(probe.why));
    return STOP_EXIT.notRunning;
  }
  if (!probe.up) {
    // Only a refused connection says nothing listens; a timeout or an HTTP error answer does not.
    if (probe.why !== 'ECONNREFUSED') return fail(`cannot tell whether this config's bridge runs at ${at}: ${probe.why}; not stopped (stop it where it runs: Ctrl-C, or kill -TERM <its pid>)`, STOP_EXIT.unknown);
    process.stdout.write(notRunningLine(`nothing answers at ${at}: ${probe.why}`));
    return STOP_EXIT.notRunning;
  }
  // This config's serve by its claim (it holds this store, and its note names this address and
  // this config file), though its /health does not name this store to the bearer read now: it was
  // started before server.bearer was replaced, or the bearer file is gone. Stopped by the noted pid.
  const own = probe.ownServe;
  if (own !== null && probe.sameStore !== true) {
    const before = probe.sameStore === null ? `its server.bearer cannot be read now (${probe.why}): put it back before you start it again` : 'it was running with a server.bearer replaced since it started';
    return signalAndWait(own.pid, { at, serve, before, o, fail, claimed: true });
  }
  if (probe.sameStore === null) return fail(`a bridge answers at ${at}, but whether it is this config's cannot be told (${probe.why}); not stopped`, STOP_EXIT.unknown);
  if (probe.sameStore === false) {
    return fail(
      `the bridge answering at ${at} is not this config's: it serves another store than ${config.store.path} or has another server.bearer (${probe.why ?? 'another store fingerprint'}); not stopped. Stop it with the config it was started with (a2a-mailbridge --config <that file> stop), or give this config another server.listen`,
      STOP_EXIT.notStopped,
    );
  }
  const pid = probe.health.pid;
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) {
    return fail(`the bridge at ${at} does not name its process id in /health (a version from before \`stop\`); stop it where it runs (Ctrl-C, or kill -TERM <its pid>)`, STOP_EXIT.unknown);
  }
  // The pid signalled is the one the serve holding this config's store noted (src/store/serve-claim.ts), and /health must name the same.
  if (probe.holderPid !== pid) {
    return fail(`the bridge at ${at} names pid ${pid}, but the serve holding this config's store noted pid ${probe.holderPid ?? 'none'}; not stopped (stop it where it runs: Ctrl-C, or kill -TERM <its pid>)`, STOP_EXIT.unknown);
  }
  return signalAndWait(pid, { at, serve, before: null, o, fail, claimed: false });
}

/**
 * Sends SIGTERM to this config's bridge `pid` and waits for its exit, unless the service manager
 * runs it (then names the manager's command). `before`: what the stopped line adds (a bearer
 * replaced since the start, or unreadable now). `claimed`: the pid comes from the claim's note
 * alone (/health did not confirm it), so on Linux its command line must be a2a-mailbridge serve's
 * ({@link runsServe}).
 */
async function signalAndWait(pid: number, c: { at: string; serve: string; before: string | null; o: StopOptions; fail: (line: string, code: number) => number; claimed: boolean }): Promise<number> {
  const { at, serve, o, fail } = c;
  if (c.claimed && runsServe(pid, o.procRoot) === false) {
    return fail(`the serve holding this config's store noted pid ${pid}, but that process is not a2a-mailbridge serve (/proc/${pid}/cmdline); not stopped (stop it where it runs: Ctrl-C, or kill -TERM <its pid>)`, STOP_EXIT.unknown);
  }
  const kind = o.kind ?? defaultKind();
  const managed = serviceMainPid(kind);
  if (managed === pid) {
    // launchd starts a KeepAlive agent again until it is booted out (launchd/com.a2a-mailbridge.plist).
    const how = kind === 'systemd' ? `systemctl --user stop ${SYSTEMD_UNIT}` : stopCommands('launchd')[0]!.join(' ');
    return fail(`this config's bridge (pid ${pid}) runs as the ${kind} service, which would start it again: stop it with: ${how}`, STOP_EXIT.notStopped);
  }
  try {
    if (o.kill) o.kill(pid, 'SIGTERM');
    else process.kill(pid, 'SIGTERM');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ESRCH') {
      // Gone between /health and the signal: said as every other path that finds nothing running says it.
      process.stdout.write(notRunningLine(`its process, pid ${pid}, had exited before the signal`));
      return STOP_EXIT.notRunning;
    }
    return fail(`could not signal the bridge (pid ${pid}): ${code ?? (err as Error).message}; not stopped`, STOP_EXIT.notStopped);
  }
  const waitMs = o.waitMs ?? STOP_WAIT_MS;
  if (!(await exited(pid, waitMs))) {
    return fail(`sent SIGTERM to this config's bridge (pid ${pid}), but it still runs after ${waitMs / 1000} s (work under way: a webhook attempt or a mail check); run this again, or look at its log; kill -KILL ${pid} only as a last resort`, STOP_EXIT.notStopped);
  }
  process.stdout.write(`stopped this config's bridge (pid ${pid}) at ${at}${c.before === null ? '' : `; ${c.before}`}; start it again with: ${serve}\n`);
  return STOP_EXIT.stopped;
}
