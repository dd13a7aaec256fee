import { createRequire } from 'node:module';
import type { Logger } from 'pino';
import { claimForServe, probeServeListen, refuseHeldStore, startApp, type App } from '../app.js';
import { loadConfig, type Config } from '../config/config.js';
import type { StoreClaim } from '../store/store.js';
import { holdStopSignals, startPause, type StopSignals } from './serve-signals.js';
import { prepareDataPlaces, storeFiles, tightenDataFiles } from '../config/data-place.js';
import type { CheckSummary } from '../core/mail-check.js';
import { createServiceLogger, rolledLogFiles, serviceLogTarget } from '../log.js';
import { cleanLines } from './format.js';
import { claimFiles, storeWasHere } from '../store/store.js';
import { startupSummary } from './serve-summary.js';
import { IDLE_CHECK_EVERY_MS, IdleRelease, releaseHeap } from './heap-release.js';
import { saveStartCodeCache } from './code-cache.js';
import { monotonicMs } from '../monotonic.js';

/**
 * `a2a-mailbridge serve`: runs the bridge until SIGINT/SIGTERM, then closes the socket, ends the
 * open streams, waits a bounded time for answers under way (src/a2a/shutdown.ts) and for work
 * under way (a mailbox check, webhook attempts), closes the store, logs "stopped" and exits 0.
 * The signals are handled from its very start (`signals`, held by src/cli/serve-signals-early.ts before this
 * module loads): one that comes before the store is opened ends the start after the step under
 * way, releases the claim if taken, logs "stopping" and "stopped" (on stderr, or the journal, when
 * the log file is not open yet) and exits 0, the store and the log file left unopened; one that
 * comes while the app starts stops it as soon as it has started, one while the first mailbox check
 * is awaited stops at once (no summary); a second signal while stopping is ignored. Once it
 * listens, it waits up to `mailbox.check_wait_ms` for the first mailbox check and prints the
 * start-up summary and its warnings on stderr (see serve-summary.ts). It refuses to start, before
 * it writes anything, when `server.listen` is taken or another serve holds the store (app.ts
 * `claimForServe`); first, when this config's own bridge already runs at this address, saying so
 * (app.ts `refuseHeldStore`).
 */
export async function serve(configFile: string, o: { logLevel?: string }, signals: StopSignals = holdStopSignals()): Promise<void> {
  const config = loadConfig(configFile);
  const level = o.logLevel ?? config.log.level;
  const terminal = process.stderr.isTTY;
  // A stop signal that came before the store is opened, asked after each step of the start.
  let signal: string | undefined;
  // This config's bridge (or another on this store) already at this address: said so, rather than "in use".
  refuseHeldStore(config);
  await startPause('config-read', signals);
  // Before anything is made or touched: server.listen can be bound (a bridge refused here writes nothing).
  await probeServeListen(config);
  if ((signal = await signals.received()) !== undefined) return stopBeforeStore(config, { level, terminal }, signal, {});
  // A store or log another user can reach leaks task text and tokens, or takes answers: refused before either is opened.
  prepareDataPlaces(config.store.path, config.log.file);
  // A store an older version made 0644 (and its -wal, -shm, claim lock and note): this user's made
  // 0600 before the store and the claim's lock are opened (a close would drop their POSIX locks),
  // never through a symlink (src/config/data-place.ts).
  // A serve ran on store.path before, and its store is gone (moved or deleted): said once the log is open (the claim makes a lock file).
  const storeGone = storeWasHere(config.store.path);
  const { lock, note } = claimFiles(config.store.path);
  const tightened = tightenDataFiles([...storeFiles(config.store.path), lock, note]);
  // Before the log and the store are opened: no other serve holds this store (src/store/serve-claim.ts).
  const claim = await claimForServe(config, { probed: true });
  await startPause('claimed', signals);
  if ((signal = await signals.received()) !== undefined) return stopBeforeStore(config, { level, terminal }, signal, { claim });
  let log: Logger;
  try {
    log = await createServiceLogger({ ...config.log, level }, { terminal });
  } catch (err) {
    claim.release();
    throw err;
  }
  if ((signal = await signals.received()) !== undefined) return stopBeforeStore(config, { level, terminal }, signal, { claim, log });
  if (tightened.length > 0) log.info({ files: tightened }, 'store files made readable by this user only (mode 0600); they were readable by others');
  if (storeGone) {
    log.warn({ store: config.store.path }, 'no store at store.path, though a serve has run on it (its claim lock is there): it was moved or deleted, and this bridge starts an empty store; to keep the tasks, stop it and put the store back (or restore a backup) before the next start');
  }
  // docs/streaming.md, "When the bridge stops": the socket, the open streams, the answers under way, then the store.
  // The app once startApp has returned: what a signal's handler closes.
  const running: { app?: App } = {};
  let signalled: string | undefined;
  let began = 0;
  let askedToStop!: () => void;
  const stopAsked = new Promise<null>((resolve) => (askedToStop = () => resolve(null)));
  // With the log in a file, an operator who pressed Ctrl-C would see nothing of the stop: its
  // lines also go to stderr, one short line each (with the log on stderr, or in the journal, which
  // takes stderr too, they would be there twice).
  const alsoOnStderr = serviceLogTarget(config.log) === 'file' ? (line: string) => process.stderr.write(`a2a-mailbridge ${line}\n`) : () => {};
  const closeAndExit = (a: App): void => {
    a.close().then(
      (stopped) => {
        const tookMs = Math.round(monotonicMs() - began);
        log.info({ ...stopped, tookMs }, 'stopped');
        alsoOnStderr(`stopped (took ${tookMs} ms)`);
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err: (err as Error).message }, 'error while stopping');
        alsoOnStderr(`could not stop cleanly: ${cleanLines((err as Error).message)}; see the log`);
        process.exit(1);
      },
    );
  };
  const stop = (signal: string): void => {
    // A second signal (Ctrl-C pressed again, a service manager's SIGTERM after it) while stopping: the stop under way goes on.
    if (signalled !== undefined) return;
    signalled = signal;
    began = monotonicMs();
    log.info({ signal }, 'stopping');
    alsoOnStderr(`is stopping (${signal})`);
    askedToStop();
    // While the app starts, it is closed as soon as startApp has returned (below).
    if (running.app) closeAndExit(running.app);
  };
  signals.take(stop);
  // A safety net: every state change is one transaction, so an unexpected rejection leaves the
  // store consistent; log it and keep serving rather than dropping every caller.
  process.on('unhandledRejection', (reason) => {
    log.error({ err: reason instanceof Error ? reason.message : String(reason), stack: reason instanceof Error ? reason.stack : undefined }, 'unhandled rejection');
  });
  const started = await startApp(config, { log, claim });
  running.app = started;
  if (signalled !== undefined) return closeAndExit(started);
  const waitedMs = config.mailbox.checkWaitMs;
  const firstCheck = await Promise.race<CheckSummary | null>([
    started.bridge.checkNow(),
    new Promise((resolve) => setTimeout(() => resolve(null), waitedMs).unref()),
    stopAsked,
  ]);
  // Stopping already (the signal's handler closes the app): no summary, no code cache.
  if (signalled !== undefined) return;
  const target = serviceLogTarget(config.log);
  const logTo =
    target === 'journal'
      ? `the journal (journalctl --user -u a2a-mailbridge), level ${level}`
      : target === 'file' && config.log.file
        ? // The file pino-roll writes to: the highest-numbered one (a run goes on with the last run's file).
          `${rolledLogFiles(config.log.file).at(-1)?.[0] ?? config.log.file} (numbered as it rotates), level ${level}`
        : `stderr${terminal ? ' as readable lines' : ' as JSON lines'}, level ${level}`;
  const summary = startupSummary({ config, endpoints: config.agents.map((a) => started.server.endpoint(a)), firstCheck, waitedMs, logTo });
  process.stderr.write(`${[...summary.lines, ...summary.warnings.map((w) => `warning: ${w}`)].join('\n')}\n`);
  // What the configuration made it load (docs/architecture.md, "Start-up and memory").
  log.debug({ packages: loadedPackages() }, 'libraries loaded at start');
  // Every function of the start is compiled now: the next start reads them (src/cli/entry.ts).
  if (saveStartCodeCache()) log.debug('code cache of the start written');
  // Started, and later quiet after calls: what the work grew V8's heap to goes back to the system
  // (src/cli/heap-release.ts).
  const release = (msg: string): void => {
    const r = releaseHeap();
    log.debug({ ...r, tookMs: Math.round(r.tookMs * 10) / 10 }, msg);
  };
  release('start-up memory released');
  let served = 0;
  // A monitor polling /health does not keep the bridge from counting as quiet.
  started.server.server.on('request', (req: { url?: string }) => {
    if (req.url !== '/health') served++;
  });
  const idle = new IdleRelease(() => release('memory released after calls'));
  setInterval(() => idle.tick(served), IDLE_CHECK_EVERY_MS).unref();
}

/**
 * Ends a `serve` whose stop signal came before its store was opened: releases the claim when it
 * was taken (its note goes; the lock file stays, as after any stop), logs "stopping" and "stopped"
 * with `store: "not opened"`, and exits 0 as a signal stop does. Without `made.log` the lines go
 * where the log goes except a log file (stderr, or the journal under systemd): the file is not
 * opened for them.
 */
async function stopBeforeStore(config: Config, o: { level: string; terminal: boolean }, signal: string, made: { claim?: StoreClaim; log?: Logger }): Promise<void> {
  const log = made.log ?? (await createServiceLogger({ ...config.log, file: undefined, level: o.level }, { terminal: o.terminal }));
  const toFile = made.log !== undefined && serviceLogTarget(config.log) === 'file';
  log.info({ signal }, 'stopping');
  made.claim?.release();
  log.info({ signal, store: 'not opened' }, 'stopped');
  if (toFile) process.stderr.write(`a2a-mailbridge stopped (${signal}) before its store was opened\n`);
  process.exit(0);
}

/**
 * The packages of node_modules this process has loaded so far (through `require`, or `import` of a
 * CommonJS package: both fill require's cache), by name, sorted.
 */
export function loadedPackages(): string[] {
  const names = new Set<string>();
  for (const file of Object.keys(createRequire(import.meta.url).cache)) {
    const at = file.lastIndexOf('node_modules/');
    if (at < 0) continue;
    const [scope, name] = file.slice(at + 'node_modules/'.length).split('/');
    if (scope) names.add(scope.startsWith('@') && name ? `${scope}/${name}` : scope);
  }
  return [...names].sort();
}
