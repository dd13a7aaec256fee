/**
 * Asks a running bridge for `GET /health` on the loopback address the config names: the one
 * network call of `status` and `service status`, to our own server only.
 */
import { effectiveConfig, type Config } from '../config/config.js';
import { readSecretFile } from '../config/secret-file.js';
import { storeFingerprint } from '../core/store-fingerprint.js';
import { listenText } from '../app.js';
import { claimHeld, notesConfig, type ClaimHolder } from '../store/store.js';
import { claimAway, type ClaimAway } from './listen-owner.js';
import { loopbackGet, MAX_PROBE_BODY_BYTES } from './loopback-get.js';

/**
 * What the claim of this config's store says (src/store/serve-claim.ts `claimHeld`), asked before
 * /health: `claimed`, a serve holds it now; `ownServe`, that serve's note when it names this
 * address and this config file (compared as real paths): this config's own bridge, whatever
 * server.bearer it read at its start (null otherwise). No serve holding the claim means this
 * config's bridge is not running, whatever answers at the address.
 */
export interface ClaimView {
  claimed: boolean;
  ownServe: ClaimHolder | null;
}

/**
 * The bridge answered (its /health body, and whether it serves this config's store), or it did
 * not (why, as an error code or a status).
 */
export type HealthProbe =
  | ({
      up: true;
      url: string;
      health: Record<string, unknown>;
      /**
       * Whether the bridge answering serves the store of this config (`store.fingerprint` of its
       * /health against this config's store.path, src/core/store-fingerprint.ts): false for a bridge
       * started with another config on the same address (another store, or a bearer other than this
       * config's, to which its /health names no store); null when this config's server.bearer (the
       * fingerprint's key, which /health asks for before it names the store) cannot be read.
       */
      sameStore: boolean | null;
      /** The two fingerprints compared: the one /health names (null: none) and this config's (null: the bearer cannot be read). */
      stores: { answering: string | null; ours: string | null };
      /** Why sameStore is null; null otherwise. */
      why: string | null;
      /**
       * Whether the bearer was presented: only when a serve holds this config's store's claim and
       * notes this very address (src/store/serve-claim.ts `claimHeld`), so a process that took the
       * address while no bridge ran is never sent it. `holderPid`: that serve's pid (its note).
       */
      bearerSent: boolean;
      holderPid: number | null;
      /**
       * This config's serve found by its listening socket while no serve holds the claim at
       * store.path: its store folder, with the claim, was moved away while it runs, and the claim
       * where it is now names this pid, address and config file (src/cli/listen-owner.ts
       * `claimAway`); the bearer went to it as to a claim holder at store.path. Null otherwise.
       */
      away: ClaimAway | null;
    } & ClaimView)
  | ({
      up: false;
      url: string;
      why: string;
      /** Something answered HTTP there, but not as an a2a-mailbridge /health (an error status, or a body that is not its JSON). */
      answered: boolean;
      /**
       * Whether this config's bridge runs cannot be told: server.listen has port 0 and the serve
       * holding this config's store has noted no port yet (it is starting) or left no readable
       * note, so there is no address to ask. False otherwise (port 0 with no serve holding the
       * claim is known not to run).
       */
      cannotTell: boolean;
    } & ClaimView);

/** The `why` of an answer that is not an a2a-mailbridge /health (`what`: its HTTP status, and what is wrong with it). */
export function notHealthWhy(what: string): string {
  return `answers with something that is not an a2a-mailbridge /health (${what})`;
}

/**
 * `server.bearer`, the key of the store fingerprint: as loaded, or read now from
 * `server.bearer_file` for a config loaded without its secrets (`status`, `service status`, which
 * work before the secrets are in place: they need it only once a bridge answers).
 * @throws SecretFileError (the file missing, unsafe or unreadable), naming the key and the fix
 */
function serverBearer(config: Config): string {
  if (config.server.bearer !== '') return config.server.bearer;
  const file = (effectiveConfig(config)?.server as { bearer_file?: unknown } | undefined)?.bearer_file;
  return readSecretFile(typeof file === 'string' ? file : '', 'server.bearer_file', config.file);
}

/**
 * The port a claim's note names on `host` (`listenText(host, port)`, 1–65535), or null when it
 * names another host, or port 0 (a serve notes its bound port once it listens: src/app.ts).
 */
function notedPort(holder: ClaimHolder, host: string): number | null {
  const prefix = listenText(host, 0).slice(0, -1);
  const rest = holder.listen.startsWith(prefix) ? holder.listen.slice(prefix.length) : '';
  const port = /^[1-9]\d{0,4}$/.test(rest) ? Number(rest) : 0;
  return port > 0 && port <= 65_535 ? port : null;
}

/** Why a server.listen with port 0 leaves no address to ask: no serve holds the claim (not running), or its note names no port on this host. */
function portZeroWhy(config: Config, claim: ReturnType<typeof claimHeld>): { why: string; cannotTell: boolean } {
  const lead = 'server.listen has port 0 (a new port at each start)';
  if (!claim.held) return { why: `${lead}, and no serve holds this config's store ${config.store.path}`, cannotTell: false };
  const h = claim.holder;
  if (h === null) return { why: `${lead}, and the serve that holds this config's store left no readable note of its address`, cannotTell: true };
  if (h.listen === listenText(config.server.host, 0)) return { why: `${lead}, and the serve that holds this config's store (pid ${h.pid}) has not noted its port yet (it is starting)`, cannotTell: true };
  return { why: `${lead}, and the serve that holds this config's store (pid ${h.pid}) listens at ${h.listen}, not on ${config.server.host}`, cannotTell: false };
}

/**
 * How long `status`, `doctor` and `service status` wait for `/health` (ms). The bridge answers it
 * in well under a millisecond; 1,500 ms was too short on a machine at load 5–6, where a running
 * bridge was then called "another program" (fresh-user trial 4, a failing `npm test`).
 */
export const HEALTH_PROBE_TIMEOUT_MS = 5_000;

/**
 * GET `http://<server.listen>/health`, within `timeoutMs`. With port 0 in server.listen (a new
 * port at each start) the port asked is the one the serve holding this config's store noted in
 * its claim (src/store/serve-claim.ts), on this host; with no such note nothing is asked. With no
 * claim at store.path, this config's serve whose store folder was moved while it runs is followed
 * from its listening socket to its claim where the folder is now (src/cli/listen-owner.ts
 * `claimAway`; Linux): it is sent the bearer as a claim holder at store.path is (`away`).
 * @param procRoot `/proc` (a test seam, src/cli/listen-owner.ts)
 * @returns never throws: a refusal, a timeout, an HTTP error or an answer that is not a JSON object
 *   is `up: false` with the reason (never the JSON parser's message: {@link notHealthWhy})
 */
export async function probeHealth(config: Config, timeoutMs = HEALTH_PROBE_TIMEOUT_MS, procRoot = '/proc'): Promise<HealthProbe> {
  const { host } = config.server;
  // The bearer goes only to the serve that holds this config's store and notes this address:
  // anything else answering there (another config's bridge, or a process that took the address
  // while no bridge ran) is never sent it (attack: it was, and could then name any pid to stop).
  // With port 0 the note is where the address is written: the serve rewrites it with the port
  // it bound once it listens, so the address asked is the claim holder's by construction.
  const claim = claimHeld(config.store.path);
  const holder = claim.held ? claim.holder : null;
  const port = config.server.port !== 0 ? config.server.port : holder === null ? 0 : (notedPort(holder, host) ?? 0);
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}/health`;
  const ourServe = holder !== null && port !== 0 && holder.listen === listenText(host, port);
  const view: ClaimView = { claimed: claim.held, ownServe: ourServe && notesConfig(holder, config.file) ? holder : null };
  if (port === 0) return { up: false, url, ...portZeroWhy(config, claim), answered: false, ...view };
  // No serve holds the claim at store.path: this config's serve whose store folder was moved away
  // while it runs is followed from its listening socket to its claim where the folder is now.
  const away = claim.held ? null : claimAway(config.file, listenText(host, port), host, port, procRoot);
  // The fingerprint is shown only to a request that presents the bearer (a2a/server.ts): read it first.
  let bearer: string | null = null;
  let unreadable = '';
  if (ourServe || away !== null) {
    try {
      bearer = serverBearer(config);
    } catch (err) {
      unreadable = (err as Error).message;
    }
  }
  try {
    const headers: Record<string, string> = bearer === null ? {} : { authorization: `Bearer ${bearer}` };
    const res = await loopbackGet(url, headers, timeoutMs);
    if (res.status < 200 || res.status > 299) return { up: false, url, why: notHealthWhy(`HTTP ${res.status}`), answered: true, cannotTell: false, ...view };
    if (res.body === null) return { up: false, url, why: notHealthWhy(`HTTP ${res.status}, a body over ${MAX_PROBE_BODY_BYTES} bytes`), answered: true, cannotTell: false, ...view };
    let health: Record<string, unknown>;
    try {
      const body: unknown = JSON.parse(res.body.toString('utf8'));
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new TypeError('not a JSON object');
      health = body as Record<string, unknown>;
    } catch {
      // The parser's own words ("Unexpected end of JSON input") tell an operator nothing.
      return { up: false, url, why: notHealthWhy(`HTTP ${res.status}, not a JSON object`), answered: true, cannotTell: false, ...view };
    }
    const named = (health.store as { fingerprint?: unknown } | undefined)?.fingerprint;
    const answering = typeof named === 'string' ? named : null;
    const sent = { bearerSent: bearer !== null, holderPid: holder?.pid ?? away?.pid ?? null, away, ...view };
    if (!ourServe && away === null) {
      const why = !claim.held
        ? `no serve holds this config's store (${config.store.path}), so what answers here is another config's bridge or another program; the bearer was not sent to it`
        : `the serve that holds this config's store ${holder ? `listens at ${holder.listen}` : 'has not noted its address yet'}, not here; the bearer was not sent to what answers here`;
      return { up: true, url, health, sameStore: false, stores: { answering: null, ours: null }, why, ...sent };
    }
    if (bearer === null) return { up: true, url, health, sameStore: null, stores: { answering, ours: null }, why: `${unreadable}; the store fingerprint is keyed with it and shown only to its holder`, ...sent };
    // No fingerprint for this config's bearer: this config's serve, started before the bearer changed.
    if (answering === null) return { up: true, url, health, sameStore: false, stores: { answering, ours: null }, why: "its /health names no store to this config's server.bearer", ...sent };
    const ours = storeFingerprint(config.store.path, bearer);
    return { up: true, url, health, sameStore: answering === ours, stores: { answering, ours }, why: null, ...sent };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (e.code ?? e.message);
    return { up: false, url, why, answered: false, cannotTell: false, ...view };
  }
}
