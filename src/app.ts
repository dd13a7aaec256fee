import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { renderPush } from './a2a/push-wire.js';
import { startServer, type RunningServer } from './a2a/server.js';
import { STOP_GRACE_MS, type ServerStopped } from './a2a/shutdown.js';
import type { Config } from './config/config.js';
import { maxOf } from './extremes.js';
import { Bridge } from './core/bridge.js';
import { BridgeMetrics } from './core/metrics.js';
import { WatchDemand } from './core/watch-demand.js';
import { startWatcher, type Watcher } from './core/watcher.js';
import { imapIdleFeed, maildirFeed, type ChangeFeed } from './uplink/change-feed.js';
import { recoverAtStart } from './core/recover.js';
import { webhookDispatcher } from './downlink/deliver.js';
import { claimHeld, claimStore, notesConfig, Store, StoreInUseError, storeInUse, type StoreClaim } from './store/store.js';
import { commandLine } from './config/config-path.js';
import { probeListen } from './a2a/listen-probe.js';
import { makeResolver, type DnsResolver } from './uplink/dkim.js';
import { ImapMailbox } from './uplink/imap-mailbox.js';
import type { Mailbox } from './uplink/mailbox.js';
import { MaildirMailbox } from './uplink/maildir-mailbox.js';
import { OAuth2RetryMailbox, tokenSourceFor } from './uplink/oauth2.js';

/**
 * The mailbox of the configured kind. With OAuth2 sign-in, the grant's token source is created
 * here on `now` (the bridge's clock decides when the access token is refreshed) and a login the
 * server refuses is tried once more with a new access token.
 */
export function openMailbox(config: Config, now?: () => number): Mailbox {
  const m = config.mailbox;
  if (m.kind === 'imap') {
    // The session stays open between checks: a check with nothing new is one STATUS (uplink/imap-mailbox.ts).
    const imap = new ImapMailbox({ ...m.imap!, folder: m.folder! }, undefined, { keepSession: true, ...(now ? { now } : {}) });
    if (!m.imap!.oauth2) return imap;
    return new OAuth2RetryMailbox(imap, tokenSourceFor(m.imap!.oauth2, m.imap!.user, now));
  }
  return new MaildirMailbox(m.maildirPath!);
}

export interface BuildOptions {
  log: Logger;
  /** Replace parts for tests: the clock, the mailbox, the DKIM resolver, the webhook dispatcher. */
  now?: () => number;
  mailbox?: Mailbox;
  dkimResolver?: DnsResolver;
  dispatcher?: Dispatcher;
  /** Prometheus instruments for `GET /metrics` (serve); a one-shot CLI command needs none. */
  metrics?: boolean;
  /** Open only a store that exists, creating nothing (src/store/db.ts `mustExist`): a CLI command that changes tasks. */
  storeMustExist?: boolean;
}

export interface AppOptions extends Omit<BuildOptions, 'metrics'> {
  /** With `mailbox.watch`: replaces the change feed (null: the timer only). */
  changeFeed?: ChangeFeed | null;
  /** How often the upkeep timer runs without a call, in ms (default {@link UPKEEP_EVERY_MS}). */
  upkeepEveryMs?: number;
  /** How long the watcher on demand outlives its last holder, in ms (default WATCH_LINGER_MS, src/core/watch-demand.ts). */
  watchLingerMs?: number;
  /** The claim on the store, taken by {@link claimForServe} already (serve takes it before its log); the app releases it. */
  claim?: StoreClaim;
}

/** A bridge on its store, mailbox and webhook dispatcher, without a server. */
export interface BuiltBridge {
  bridge: Bridge;
  /** Waits for the work under way, closes the mailbox, the dispatcher (unless given) and the store. */
  close(): Promise<void>;
}

/**
 * The composition root: opens the store (migrations; no whole-file check: src/store/integrity.ts) and builds the bridge on it —
 * the one place that does, for `serve` (through {@link startApp}), the CLI commands that act
 * (`retry`), the demo, the tests and the benchmarks.
 *
 * @throws StoreError when the store cannot be used
 */
export function buildBridge(config: Config, o: BuildOptions): BuiltBridge {
  const store = Store.open(config.store.path, {
    ...(o.storeMustExist ? { mustExist: true } : {}),
    // A new store's schema takes milliseconds; an upgrade may rebuild tables of a large store once.
    onMigrate: ({ from, to, tookMs }) => {
      if (from === 0) return;
      if (tookMs === undefined) o.log.info({ from, to }, 'upgrading the store schema; on a large store this takes a while, once');
      else o.log.info({ from, to, tookMs }, 'store schema upgraded');
    },
  });
  // Checkpoints (copying the WAL into the file, and syncing) on a worker, not inside a commit.
  store.checkpointOffThread(
    (message) => o.log.warn({ err: message }, 'a WAL checkpoint failed; the next commit asks for another'),
    (message) => o.log.warn({ err: message }, 'no WAL checkpoint while store.path does not name the store file the bridge opened'),
  );
  const maxTimeout = maxOf(config.agents.map((a) => a.webhook.timeoutMs), Number.NEGATIVE_INFINITY);
  // Our webhook dispatcher (and undici with it) is made by the first webhook, not at start.
  let ours: Dispatcher | undefined;
  const bridge = new Bridge({
    config,
    store,
    mailbox: o.mailbox ?? openMailbox(config, o.now),
    log: o.log,
    now: o.now ?? Date.now,
    startedAt: (o.now ?? Date.now)(),
    random: Math.random,
    get dispatcher(): Dispatcher {
      return o.dispatcher ?? (ours ??= webhookDispatcher(maxTimeout));
    },
    dkimResolver: o.dkimResolver ?? makeResolver(config.dnsServers),
    ...(o.metrics ? { metrics: new BridgeMetrics(store) } : {}),
  });
  return {
    bridge,
    async close() {
      await bridge.close();
      await ours?.close();
      await store.closeAndJoin();
    },
  };
}

/** Resolves when `work` settles; after `ms` without, calls `cut` and waits for it and the work. */
async function cutAfter(work: Promise<unknown>, ms: number, cut: () => Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)));
  const first = await Promise.race([work.then(() => 'done' as const, () => 'done' as const), late]);
  clearTimeout(timer);
  if (first === 'late') await Promise.allSettled([cut(), work]);
}

/** How often `serve` runs the store's upkeep without a call (Bridge.maintainStore), in ms. */
const UPKEEP_EVERY_MS = 60_000;

export interface App {
  bridge: Bridge;
  server: RunningServer;
  /**
   * Stops the server first (no new call; open streams end; answers under way get
   * STOP_GRACE_MS, src/a2a/shutdown.ts), then the watcher, then waits for the bridge's work under
   * way (a mailbox check still running after another STOP_GRACE_MS is cut) and closes the store
   * and releases the claim.
   * @returns what stopping the server came to
   */
  close(): Promise<ServerStopped>;
}

/** `host:port` of `server.listen`, an IPv6 host in brackets. */
export function listenText(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * That `server.listen` can be bound now (bound and closed at once): `serve` asks before it makes
 * its store and log folders, so a bridge that cannot listen leaves nothing behind.
 * @throws the bind error (EADDRINUSE…) or ListenError
 */
export function probeServeListen(config: Config): Promise<void> {
  return probeListen(config.server.host, config.server.port);
}

/**
 * What `serve` asks first, before it probes `server.listen`: whether a serve holds this config's
 * store already and notes this very address (src/store/serve-claim.ts `claimHeld`, which never
 * waits). Then the address is taken by that serve, and the listen probe's "already in use" would
 * not say by what: refused naming it instead — this config's own bridge (its note names this config
 * file, compared as real paths) as "already running" with its pid and the stop command, another
 * config's on this store with the claim's refusal. A serve holding the store at another address is
 * left to {@link claimForServe}'s refusal, after the listen probe.
 * @throws StoreInUseError
 */
export function refuseHeldStore(config: Config): void {
  const claim = claimHeld(config.store.path);
  if (!claim.held || claim.holder === null) return;
  const h = claim.holder;
  if (h.listen !== listenText(config.server.host, config.server.port)) return;
  if (!notesConfig(h, config.file)) throw storeInUse(config.store.path, h);
  throw new StoreInUseError(`this config's bridge is already running (pid ${h.pid}, listening at ${h.listen}); stop it first: ${commandLine(config.file, 'stop')}, or leave it running`, h);
}

/**
 * What `serve` makes sure of before it touches the store: that `server.listen` can be bound (a
 * bridge that cannot listen creates, or migrates, no store), then that no other `serve` runs on
 * this store, by taking the claim (src/store/serve-claim.ts) that it holds until it closes.
 *
 * `probed`: the caller has just made the first check ({@link probeServeListen}).
 * @throws the bind error (EADDRINUSE…) or ListenError; StoreInUseError naming the other bridge and
 *   the fix; StoreError when the lock file cannot be made
 */
export async function claimForServe(config: Config, o: { probed?: boolean } = {}): Promise<StoreClaim> {
  const { host, port } = config.server;
  if (!o.probed) await probeListen(host, port);
  return claimStore(config.store.path, { listen: listenText(host, port), config: config.file });
}

/**
 * `serve`: takes the claim on the store ({@link claimForServe}, unless given), builds the bridge
 * ({@link buildBridge}), resumes interrupted dispatches and starts the loopback server, then the
 * watcher when `mailbox.watch` is on. The store is ready before the socket listens, so no call can
 * reach a half-built bridge. The claim is released when the app closes, or when the start fails.
 *
 * @throws StoreError, StoreInUseError (another serve holds the store), ListenError, or the listen
 *   error (EADDRINUSE…)
 */
export async function startApp(config: Config, o: AppOptions): Promise<App> {
  const claim = o.claim ?? (await claimForServe(config));
  let built: BuiltBridge;
  try {
    built = buildBridge(config, { ...o, metrics: true });
  } catch (err) {
    claim.release();
    throw err;
  }
  const { bridge } = built;
  let server: RunningServer;
  try {
    recoverAtStart(bridge.ctx);
    server = await startServer(config, bridge, o.log);
  } catch (err) {
    await built.close();
    claim.release();
    throw err;
  }
  const bound = server.server.address() as AddressInfo;
  claim.listening(listenText(bound.address, bound.port));
  bridge.resume();
  bridge.push.start(renderPush);
  const feed = (): ChangeFeed | null =>
    o.changeFeed !== undefined
      ? o.changeFeed
      : config.mailbox.kind === 'imap'
        ? imapIdleFeed({ ...config.mailbox.imap!, folder: config.mailbox.folder! }, o.log)
        : maildirFeed(config.mailbox.maildirPath!, o.log);
  // The store's upkeep (WAL bounds, the daily integrity check) also when no call comes; and the
  // push deliveries another process's commit queued (the CLI's `retry` reopens a task): sent, and
  // the watcher held again for a reopened task with a push configuration (Store.generation tells).
  const upkeep = setInterval(() => {
    void bridge.maintainStore();
    bridge.push.refresh();
  }, o.upkeepEveryMs ?? UPKEEP_EVERY_MS);
  upkeep.unref();
  let watcher: Watcher | undefined;
  let demand: WatchDemand | undefined;
  if (config.mailbox.watch) watcher = startWatcher(bridge, feed(), config.mailbox.watchTickMs);
  else {
    // Streams and push notifications need mail read without a call: the watcher runs while one is open (docs/streaming.md).
    demand = new WatchDemand(() => startWatcher(bridge, feed(), config.mailbox.watchTickMs), o.log, o.watchLingerMs);
    const d = demand;
    bridge.setWatchDemand(() => d.acquire());
  }
  return {
    bridge,
    server,
    async close() {
      clearInterval(upkeep);
      // The server before the watcher: an answer under way may still wait for the mailbox.
      const stopped = await server.close();
      await watcher?.stop();
      await demand?.stop();
      // A mailbox check that hangs (a server that accepts and never answers waits out timeout_s,
      // up to 300 s) is cut after the grace the answers had (it then fails as "aborted"), so a stop
      // ends within `a2a-mailbridge stop`'s wait (STOP_WAIT_MS, src/cli/stop.ts).
      await cutAfter(bridge.idle(), STOP_GRACE_MS, () => bridge.ctx.mailbox.close());
      await built.close();
      claim.release();
      return stopped;
    },
  };
}
