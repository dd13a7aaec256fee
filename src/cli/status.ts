import { attemptOutcome } from './attempt-text.js';
import { existsSync } from 'node:fs';
import { loadConfig, type Config } from '../config/config.js';
import { commandLine } from '../config/config-path.js';
import { humanDuration, iso } from '../core/time.js';
import { plural } from '../plural.js';
import { claimHeld, notesConfig, Store, storeWasHere, type ClaimHolder } from '../store/store.js';
import { type MailboxState } from '../store/mailbox-state.js';
import type { FailingDispatch, RefusedForOpenTask } from '../store/overview.js';
import { TASK_STATES, TERMINAL_STATES, type TaskState } from '../store/task-state.js';
import { clean, isoJson, printJson } from './format.js';
import { probeHealth, type HealthProbe } from './health-probe.js';
import { goneStoreText } from './open-store.js';
import { storeBytes } from './serve-summary.js';
import { defaultKind, LAUNCHD_LABEL, serviceTarget, SYSTEMD_UNIT } from './service.js';

/** How many failing webhooks and refused-reply tasks the summary lists. */
const LIST_LIMIT = 10;
const WEEK_MS = 7 * 86_400_000;

/** What `status --json` prints; times ISO. */
export interface StatusReport {
  config: string;
  /**
   * `answering`: a bridge answers /health at server.listen; `sameStore`: it serves this config's
   * store (false: a bridge of another config; null: not answering, or it does not say which store);
   * `why`: what was wrong, when something was; `storeNamed`: whether its /health named a store
   * to this config's bearer (false: it does not take this bearer, so another config's bridge, or
   * one started before this config's bearer changed; null: not answering, or the bearer unread).
   * `olderBearer`: this config's own bridge by the claim of its store (its note names this address
   * and this config file: src/cli/health-probe.ts `ClaimView`), whose /health does not name the
   * store to the bearer read now — `replaced`: server.bearer changed since it started; `unreadable`:
   * the bearer file cannot be read now (`why` says why) — with that serve's `pid`; null otherwise.
   * `claimed`: a serve holds the claim of this config's store (src/store/serve-claim.ts); false
   * means this config's bridge is not running, whatever answers at server.listen. `taken`: it is
   * not running and something else answers there (another program, or another config's bridge).
   * With port 0 in server.listen, `url` is at the port the claim's holder noted (its bound one).
   * `cannotTell`: not answering, and whether it runs cannot be told (port 0, and the serve holding
   * the claim has noted no port yet, or its note cannot be read: src/cli/health-probe.ts).
   * `storeAway`: this config's bridge, found from its listening socket while no serve holds the
   * claim at store.path: its store folder, with the claim, was moved while it runs, and the claim
   * where it is now names this config (src/cli/health-probe.ts `away`); its `pid` and the store's
   * path now (`store`). Null otherwise. The bridge runs then (exit 0), and `claimed` is false.
   */
  bridge: {
    answering: boolean;
    url: string;
    status: string | null;
    version: string | null;
    sameStore: boolean | null;
    why: string | null;
    storeNamed: boolean | null;
    olderBearer: { pid: number; bearer: 'replaced' | 'unreadable' } | null;
    claimed: boolean;
    taken: boolean;
    cannotTell: boolean;
    storeAway?: { pid: number; store: string } | null;
    /** Nothing answers, and a serve holds this config's store's claim: its note (null when unreadable). */
    heldBy?: ClaimHolder | null;
    /** This config's running bridge's /health `store.lastCheck` when its store is not ok (a store file moved away, damaged…), cut; null otherwise. */
    storeProblem?: string | null;
  };
  /** `wasHere`: the file is not there though a serve has run on it (its claim lock is: src/store/serve-claim.ts `storeWasHere`). */
  store: { path: string; exists: boolean; bytes: number; wasHere?: boolean };
  tasks: { open: number; finished: number; byState: Partial<Record<TaskState, number>> } | null;
  mailbox: { kind: string; lastCheckAt: string | null; lastResult: string | null; lastError: string | null; errorSince: string | null; lastRecordedAt: string | null; lastVerdict: string | null; notOurs: number } | null;
  failingWebhooks: (Omit<FailingDispatch, 'nextAttemptAt'> & { nextAttemptAt: string | null })[];
  dispatchFailuresLast7Days: number;
  refusedRepliesForOpenTasks: (Omit<RefusedForOpenTask, 'lastSeenAt'> & { lastSeenAt: string | null })[];
}

/** The `mailbox_state` key of the configured folder (the IMAP folder name, or the Maildir path). */
function folderKey(config: Config): string {
  return config.mailbox.kind === 'imap' ? config.mailbox.folder! : config.mailbox.maildirPath!;
}

function bytes(n: number): string {
  return n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/**
 * The `bridge` line when nothing answers at this config's address while a serve holds its store's
 * claim: another config's bridge serves this store (fresh-user trial 12: `status` said "start it",
 * and that `serve` is refused, the store being in use). Names the holder as its note does.
 */
function heldElsewhereLine(r: StatusReport, at: string): string {
  const h = r.bridge.heldBy ?? null;
  if (h && notesConfig(h, r.config)) {
    return `bridge    not answering at ${at} (${r.bridge.why}), though this config's serve (pid ${h.pid}) holds its store: it may still be starting; if it stays so, ${commandLine(r.config, 'stop')}`;
  }
  const who = h ? ` (pid ${h.pid}, started with ${h.config}, listening at ${h.listen})` : '';
  return `bridge    not answering at ${at} (${r.bridge.why}), but another a2a-mailbridge serve holds its store ${r.store.path}${who}: a serve of this config would be refused; use that bridge, or stop it (a2a-mailbridge --config <the file it was started with> stop) before you start this one`;
}

/** The note of the serve holding the claim of the store at `path`, or null (not held, or unreadable). */
function heldBy(path: string): ClaimHolder | null {
  const h = claimHeld(path);
  return h.held ? h.holder : null;
}

/** `/health`'s account of a store that is not ok (`store.lastCheck`), cut to 300 characters; null when it is ok or says nothing. */
function storeProblemOf(health: Record<string, unknown>): string | null {
  const store = health.store as { ok?: unknown; lastCheck?: unknown } | undefined;
  if (!store || store.ok !== false || typeof store.lastCheck !== 'string') return null;
  return clean(store.lastCheck.slice(0, 300));
}

/** Why the bridge answering is not known to be this config's, or null when it is. */
function storeWhy(probe: HealthProbe & { up: true }): string | null {
  if (probe.sameStore === true) return null;
  if (probe.sameStore === false) return probe.why ?? `its /health names store ${probe.stores.answering}, this config's is ${probe.stores.ours}`;
  return probe.why;
}

/**
 * Gathers the report: the store opened read-only (safe beside a running bridge), and `GET /health`
 * on `server.listen` when a bridge answers there.
 */
export async function statusReport(config: Config, now: number): Promise<StatusReport> {
  const probe: HealthProbe = await probeHealth(config);
  const path = config.store.path;
  // This config's bridge by its socket and fingerprint, though no claim is at store.path (src/cli/health-probe.ts `listener`).
  const storeAway = probe.up && probe.away !== null && probe.sameStore === true ? { pid: probe.away.pid, store: probe.away.store } : null;
  const taken = !probe.claimed && storeAway === null && config.server.port !== 0 && (probe.up || probe.why !== 'ECONNREFUSED');
  const older = probe.up && probe.ownServe !== null && probe.sameStore !== true ? { pid: probe.ownServe.pid, bearer: probe.sameStore === null ? ('unreadable' as const) : ('replaced' as const) } : null;
  const exists = existsSync(path);
  const report: StatusReport = {
    config: config.file,
    bridge: probe.up
      ? { answering: true, url: probe.url, status: clean(String(probe.health.status).slice(0, 64)), version: clean(String(probe.health.version).slice(0, 64)), sameStore: probe.sameStore, why: storeWhy(probe), storeNamed: probe.sameStore === null || !probe.bearerSent ? null : probe.stores.answering !== null, olderBearer: older, claimed: probe.claimed, taken, cannotTell: false, storeAway, storeProblem: probe.sameStore === true ? storeProblemOf(probe.health) : null }
      : { answering: false, url: probe.url, status: null, version: null, sameStore: null, why: probe.why, storeNamed: null, olderBearer: null, claimed: probe.claimed, taken, cannotTell: probe.cannotTell, storeAway: null, heldBy: probe.claimed ? heldBy(path) : null },
    store: { path, exists, bytes: exists ? storeBytes(path) : 0, wasHere: !exists && storeWasHere(path) },
    tasks: null,
    mailbox: null,
    failingWebhooks: [],
    dispatchFailuresLast7Days: 0,
    refusedRepliesForOpenTasks: [],
  };
  if (!exists) return report;
  const db = Store.open(path, { readOnly: true });
  try {
    const byState = db.stats.tasksByState();
    const sum = (open: boolean): number => TASK_STATES.filter((s) => TERMINAL_STATES.has(s) !== open).reduce((n, s) => n + (byState[s] ?? 0), 0);
    report.tasks = { open: sum(true), finished: sum(false), byState };
    const m: MailboxState = db.mailbox.state(folderKey(config));
    const last = db.ledger.latest();
    report.mailbox = { kind: config.mailbox.kind, lastCheckAt: isoJson(m.lastCheckAt), lastResult: m.lastResult, lastError: m.lastError, errorSince: isoJson(m.errorSince), lastRecordedAt: isoJson(last?.seenAt ?? null), lastVerdict: last?.verdict ?? null, notOurs: db.mailbox.notOursCount(folderKey(config)) };
    report.failingWebhooks = db.overview.failingDispatches(LIST_LIMIT).map((f) => ({ ...f, nextAttemptAt: isoJson(f.nextAttemptAt) }));
    report.dispatchFailuresLast7Days = db.overview.dispatchFailuresSince(now - WEEK_MS);
    report.refusedRepliesForOpenTasks = db.overview.refusedForOpenTasks(LIST_LIMIT).map((r) => ({ ...r, lastSeenAt: isoJson(r.lastSeenAt) }));
  } finally {
    db.close();
  }
  return report;
}

/**
 * The commands that restart this config's bridge: `stop`, then `serve`; and first the service's
 * (`systemctl --user restart`, or `launchctl kickstart -k` on macOS: src/cli/service.ts) when its
 * service file is installed (`installed`; default: whether the file `service install` writes,
 * {@link serviceTarget}, exists, as `service status` tells).
 */
export function restartCommands(configFile: string, platform: NodeJS.Platform = process.platform, uid = process.getuid?.() ?? 501, installed = existsSync(serviceTarget(defaultKind(platform)))): string {
  const byHand = `${commandLine(configFile, 'stop')}, then ${commandLine(configFile, 'serve')}`;
  if (!installed) return byHand;
  const service = defaultKind(platform) === 'launchd' ? `launchctl kickstart -k gui/${uid}/${LAUNCHD_LABEL}` : `systemctl --user restart ${SYSTEMD_UNIT}`;
  return `${service} (the installed service), or ${byHand}`;
}

/** The `bridge` line of this config's own bridge (by its store's claim) whose /health names no store to the bearer read now. */
function olderBearerLine(r: StatusReport, at: string): string {
  const o = r.bridge.olderBearer!;
  if (o.bearer === 'unreadable') return `bridge    running at ${at} (pid ${o.pid}, by the claim of ${r.store.path}), but this config's server.bearer cannot be read now (${r.bridge.why}); the bridge keeps the bearer it read at its start`;
  return `bridge    running at ${at} (pid ${o.pid}, by the claim of ${r.store.path}) with an older server.bearer: the bearer was replaced since it started, and callers with the new one are refused; restart it: ${restartCommands(r.config)}`;
}

/**
 * The `bridge` line of a bridge that is not this config's (`r.bridge.sameStore` false). The
 * fingerprint /health shows is keyed with the bearer and shown only to it (docs/architecture.md,
 * "Operating"), so a bridge that names no store to this config's bearer does not take that bearer:
 * another config's, or this config's started before its bearer changed; one that names another
 * store takes the bearer and serves another store.path. Either may be this config's bridge from
 * before an edit: then a restart is the fix.
 */
function otherBridgeLine(r: StatusReport, at: string): string {
  const changed = r.bridge.storeNamed === false ? "this config's bearer (server.bearer_file) changed" : "this config's store.path changed";
  return `bridge    NOT this config's: the bridge answering at ${at} serves another store than ${r.store.path} or has another server.bearer (${r.bridge.why}); it was started with another config, or ${changed} since that bridge started — restart it: ${restartCommands(r.config)}; if it is another config's, stop it (a2a-mailbridge --config <the file it was started with> stop) or give this config another server.listen`;
}

/**
 * The `bridge` line when no serve holds this config's store (so its bridge is not running) and
 * something else answers at server.listen, where `serve` would fail to listen.
 */
function takenLine(r: StatusReport, at: string): string {
  const what = r.bridge.answering
    ? 'another program, which answers /health as an a2a-mailbridge would (another config\'s bridge? stop it with a2a-mailbridge --config <the file it was started with> stop)'
    : `another program (it ${r.bridge.why?.startsWith('answers ') ? r.bridge.why : `does not answer as a bridge: ${r.bridge.why}`})`;
  return `bridge    not running; ${at} is taken by ${what}: free it or change server.listen in ${r.config}`;
}

/** The human summary: one labelled line per subject, a line per failing webhook and refused-reply task, each with the command that tells more. */
export function formatStatus(r: StatusReport, now: number): string {
  const ago = (t: string | null): string => (t === null ? '' : ` (${humanDuration(now - Date.parse(t))} ago)`);
  const lines = [`a2a-mailbridge status: ${r.config}`];
  // The commands named carry this config's --config unless every command finds it by itself (src/config/config-path.ts).
  const cmd = (args: string): string => commandLine(r.config, args);
  const at = r.bridge.url.replace(/\/health$/, '');
  lines.push(
    r.bridge.taken
      ? takenLine(r, at)
      : r.bridge.cannotTell
        ? `bridge    cannot tell whether it runs (${r.bridge.why})`
        : !r.bridge.answering && r.bridge.claimed
          ? heldElsewhereLine(r, at)
          : !r.bridge.answering
          ? `bridge    not answering at ${at} (${r.bridge.why}); start it: ${cmd('serve')}, or ${cmd('service status')}`
          : r.bridge.storeAway
            ? `bridge    running at ${at} (pid ${r.bridge.storeAway.pid}), but its store is no longer at ${r.store.path}: it was moved to ${r.bridge.storeAway.store} while the bridge runs; move it back (then the bridge goes on), or stop it (${cmd('stop')}) and move it back before the next start`
            : r.bridge.olderBearer !== null
              ? olderBearerLine(r, at)
              : r.bridge.sameStore === false
                ? otherBridgeLine(r, at)
                : r.bridge.sameStore === null
                  ? `bridge    answering at ${at} (version ${r.bridge.version}, /health status ${r.bridge.status}), but whether it serves ${r.store.path} cannot be told: ${r.bridge.why}`
                  : `bridge    answering at ${at} (version ${r.bridge.version}, /health status ${r.bridge.status})`,
  );
  if (!r.store.exists) {
    lines.push(r.bridge.storeAway ? `store     ${r.store.path} is not there: the running bridge has it open at ${r.bridge.storeAway.store}` : r.store.wasHere ? `store     ${goneStoreText(r.store.path, cmd('serve'))}` : `store     ${r.store.path} does not exist yet; serve creates it on its first start`);
    if (r.bridge.storeProblem) lines.push(`          NOT OK in the running bridge's /health: ${r.bridge.storeProblem}`);
    return lines.join('\n');
  }
  lines.push(`store     ${r.store.path}: ${bytes(r.store.bytes)} on disk (with its -wal/-shm)`);
  if (r.bridge.storeProblem) lines.push(`          NOT OK in the running bridge's /health: ${r.bridge.storeProblem}`);
  const t = r.tasks!;
  const byState = (open: boolean): string => TASK_STATES.filter((s) => TERMINAL_STATES.has(s) !== open).map((s) => `${t.byState[s] ?? 0} ${s}`).join(', ');
  lines.push(`tasks     ${t.open} open (${byState(true)}); ${t.finished} finished (${byState(false)})`);
  const m = r.mailbox!;
  if (m.lastError !== null && m.errorSince !== null) lines.push(`mailbox   UNREACHABLE since ${iso(Date.parse(m.errorSince))}${ago(m.errorSince)}: ${m.lastError}; ${cmd('doctor')} checks the settings`);
  else if (m.lastCheckAt === null) lines.push(`mailbox   ${m.kind}, never checked yet`);
  else lines.push(`mailbox   ${m.kind}, last checked ${iso(Date.parse(m.lastCheckAt))}${ago(m.lastCheckAt)}: ${m.lastResult ?? 'ok'}`);
  // A check that found nothing new says "0 new messages"; the mail recorded last stays visible.
  if (m.lastRecordedAt !== null && m.lastVerdict !== null) lines.push(`            last mail recorded ${iso(Date.parse(m.lastRecordedAt))}${ago(m.lastRecordedAt)}: ${m.lastVerdict} (${cmd('ledger')} shows it)`);
  // Untagged mail gets no ledger row (as IMAP SEARCH does not list it); a Maildir's is counted here.
  if (m.notOurs > 0) lines.push(`            ${plural(m.notOurs, 'file')} in the Maildir not ours (no agent's From, no tag): no ledger row, not read again`);
  if (r.failingWebhooks.length === 0) lines.push('webhooks  none failing');
  else {
    lines.push(`webhooks  ${plural(r.failingWebhooks.length, 'dispatch', 'dispatches')} not accepted yet${r.failingWebhooks.length === LIST_LIMIT ? ' (the first 10)' : ''}:`);
    for (const f of r.failingWebhooks) {
      const last = f.outcome === null ? `attempt ${f.attempt} under way` : attemptOutcome({ ...f, outcome: f.outcome });
      // No serve holds the store's claim: nothing makes that attempt until one runs (fresh-user trial 6).
      const next = f.nextAttemptAt !== null ? `; next ${iso(Date.parse(f.nextAttemptAt))}${r.bridge.claimed ? '' : ' (once a bridge runs)'}` : '';
      lines.push(`            task ${f.taskId.slice(0, 8)} (${f.agent}) ${last}${next}: ${cmd(`show ${f.taskId.slice(0, 8)}`)}`);
    }
  }
  if (r.dispatchFailuresLast7Days > 0) {
    lines.push(`          ${plural(r.dispatchFailuresLast7Days, 'task')} FAILED by dispatch in the last 7 days: ${cmd('tasks --state failed --since 7d')}`);
  }
  if (r.refusedRepliesForOpenTasks.length === 0) lines.push('refused   no reply refused for an open task');
  else {
    lines.push(`refused   replies refused for ${plural(r.refusedRepliesForOpenTasks.length, 'open task')}:`);
    for (const x of r.refusedRepliesForOpenTasks) {
      lines.push(`            task ${x.taskId.slice(0, 8)} (${x.agent}, ${x.state}): ${plural(x.count, 'reply', 'replies')}, last ${x.lastVerdict}${ago(x.lastSeenAt)}: ${cmd(`ledger --task ${x.taskId.slice(0, 8)}`)}`);
    }
  }
  return lines.map(clean).join('\n');
}

/**
 * `a2a-mailbridge status [--json]`: a short summary of what `/health` knows and what needs a look
 * — whether the bridge answers, the store's size on disk, open tasks, the last mailbox check,
 * webhooks not accepted yet, refused replies for open tasks — from the store opened read-only,
 * and `/health` when the bridge is up. The exit code says whether the bridge answers, as the LSB
 * init-script `status` codes (and `systemctl status`) do: the rest of the report is information.
 *
 * With port 0 in server.listen (a new port at each start) the bridge is asked at the port the
 * serve holding this config's store noted in its claim (src/cli/health-probe.ts): the bearer goes
 * to it under the same rule as to a fixed address. No serve holding the claim is "not running"
 * (3), as for a fixed address: a running serve holds it from before it listens until it exits,
 * and the system drops it however the process ends (src/store/serve-claim.ts).
 *
 * @returns {@link STATUS_EXIT}: 0 this config's bridge answers /health (also one running with a
 *   server.bearer replaced since its start, or unreadable now: its store's claim tells it is this
 *   config's, and the line says to restart it); 3 it does not (not running — with port 0: no
 *   serve holds this config's store, or the one holding it listens on another host —
 *   not on this address, or the bridge answering there serves another store: another config's,
 *   or this config's started before its bearer or store.path changed);
 *   4 it cannot be told (server.listen has port 0 and the serve holding the store has noted no
 *   port yet or left no readable note)
 * @throws ConfigError, StoreError
 */
export async function runStatus(configFile: string, o: { json?: boolean }, now = Date.now()): Promise<number> {
  const config = loadConfig(configFile, { skipSecrets: true });
  const report = await statusReport(config, now);
  if (o.json) printJson(report);
  else process.stdout.write(`${formatStatus(report, now)}\n`);
  const b = report.bridge;
  // This config's bridge by its claim runs, whatever bearer it read at its start (the line says to restart it).
  if (b.olderBearer !== null || b.storeAway) return STATUS_EXIT.answering;
  if (b.taken) return STATUS_EXIT.notAnswering;
  if (b.answering) return b.sameStore === true ? STATUS_EXIT.answering : b.sameStore === false ? STATUS_EXIT.notAnswering : STATUS_EXIT.unknown;
  return b.cannotTell ? STATUS_EXIT.unknown : STATUS_EXIT.notAnswering;
}

/**
 * The exit codes of `status`, after the LSB init-script `status` action (0 running, 3 not running,
 * 4 unknown): of this config's bridge, so a bridge of another config on the same address is 3.
 */
export const STATUS_EXIT = { answering: 0, notAnswering: 3, unknown: 4 } as const;
