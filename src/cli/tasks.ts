import { attemptOutcome } from './attempt-text.js';
import { plural } from '../plural.js';
import { claimHeld, type StoreReads } from '../store/store.js';
import { isTerminal } from '../store/task-state.js';
import type { TaskRow } from '../store/task-rows.js';
import { parseCount, parseStates, parseTime } from './args.js';
import { clean, isoJson, isoUtc, printJson, table, truncate } from './format.js';
import { configuredAgents, openReadOnly, storeFile, type StoreLocation } from './open-store.js';
import { nearestKey } from '../config/fields.js';
import { CliFailure } from './errors.js';

/** Options of `a2a-mailbridge tasks`, as commander hands them over (strings, unparsed). */
export interface TasksOptions {
  agent?: string;
  /** Comma-separated states or `open`/`finished` (see `parseStates`). */
  state?: string;
  context?: string;
  /** ISO time or age (`2h`, `7d`): only tasks whose status changed since then. */
  since?: string;
  limit?: string;
  json?: boolean;
}

/** A task as `tasks --json` prints it: the row with ISO-8601 UTC times (ms precision). */
export interface TaskJson {
  id: string;
  agent: string;
  contextId: string;
  state: string;
  stateReason: string | null;
  failedBy: string | null;
  turn: number;
  caller: string | null;
  createdAt: string | null;
  updatedAt: string | null;
  deadlineAt: string | null;
}

export function taskJson(t: TaskRow): TaskJson {
  return {
    id: t.id,
    agent: t.agent,
    contextId: t.contextId,
    state: t.state,
    stateReason: t.stateReason,
    failedBy: t.failedBy,
    turn: t.turn,
    caller: t.caller,
    createdAt: isoJson(t.createdAt),
    updatedAt: isoJson(t.updatedAt),
    deadlineAt: isoJson(t.deadlineAt),
  };
}

/**
 * Why a task is where it is, in one line: for an open task, the refused replies first (the gates
 * turned down mail tagged with it during this turn: see `ledger --task`); for a SUBMITTED task,
 * its last webhook attempt and when the next one is due (not the "dispatch pending" it was
 * created with); else the cause of the latest state change.
 */
export function whyText(db: StoreReads, t: TaskRow, stalled?: { now: number }): string {
  const parts: string[] = [];
  const turn = isTerminal(t.state) ? undefined : db.turns.get(t.id, t.turn);
  const refused = turn ? db.ledger.refusedRepliesOf(t.id, turn.turn) : undefined;
  if (refused) parts.push(`${plural(refused.count, 'reply', 'replies')} refused (last: ${refused.lastVerdict})`);
  if (t.state === 'SUBMITTED' && turn) {
    // A time already past while no bridge runs: nothing makes that attempt until one starts. Said
    // first, so the table's cut WHY (100 characters) keeps it.
    if (stalled && turn.nextAttemptAt !== null && turn.nextAttemptAt < stalled.now) parts.push('no bridge running');
    const a = db.attempts.last(turn.dispatchId);
    if (!a) parts.push(`no webhook attempt yet${turn.nextAttemptAt !== null ? `; due ${isoUtc(turn.nextAttemptAt)}` : ''}`);
    else if (a.outcome === null) parts.push(`webhook attempt ${a.attempt} under way since ${isoUtc(a.startedAt)}`);
    else {
      const next = turn.nextAttemptAt !== null ? `; next attempt ${isoUtc(turn.nextAttemptAt)}` : '';
      parts.push(`webhook ${attemptOutcome({ ...a, outcome: a.outcome })}${next}`);
    }
  } else parts.push(t.stateReason ?? '');
  return parts.filter(Boolean).join('; ');
}

/**
 * The human table of `tasks`: one line per task, newest status first — status time, state,
 * agent, turn, task id (whole, to paste into `show`), context id and {@link whyText} (cut to 100
 * characters; `--json` and `show` have it whole).
 */
export function formatTasks(rows: readonly TaskRow[], why: (t: TaskRow) => string = (t) => t.stateReason ?? ''): string {
  if (rows.length === 0) return 'no tasks match';
  return table(
    ['UPDATED (UTC)', 'STATE', 'AGENT', 'TURN', 'TASK', 'CONTEXT', 'WHY'],
    rows.map((t) => [
      isoUtc(t.updatedAt),
      t.state,
      t.agent,
      String(t.turn),
      t.id,
      truncate(clean(t.contextId), 24),
      truncate(clean(why(t)), 100),
    ]),
  );
}

/**
 * Whether no bridge runs on this store, asked only when a SUBMITTED task listed has a webhook
 * attempt due in the past: no `serve` holds the store's claim (src/store/serve-claim.ts
 * `claimHeld`), which every serve takes before it opens the store and holds until it exits, so
 * nothing dispatches its webhooks, whatever answers at server.listen. False for `--db` (a backup,
 * say: no bridge is meant to run on it).
 */
function noBridgeRuns(db: StoreReads, rows: readonly TaskRow[], where: StoreLocation, now: number): boolean {
  if (where.db !== undefined) return false;
  const pastDue = rows.some((t) => t.state === 'SUBMITTED' && (db.turns.get(t.id, t.turn)?.nextAttemptAt ?? now) < now);
  return pastDue && !claimHeld(storeFile(where)).held;
}

/**
 * Refuses an `--agent` that matched no task when it is neither an agent of the config nor one a
 * stored task names (an agent since removed from the config is still listed): a typo says so,
 * with the known names and the nearest (config/fields.ts nearestKey), rather than "no tasks match".
 * @throws CliFailure for such a name (exit 1, as `cancel --all-open --agent` refuses one)
 */
function checkAgentKnown(db: StoreReads, where: StoreLocation, agent: string): void {
  const configured = configuredAgents(where);
  const stored = db.stats.agentsWithTasks();
  if (configured?.includes(agent) || stored.includes(agent)) return;
  const known = [...new Set([...(configured ?? []), ...stored])];
  const near = nearestKey(agent, known);
  const whose = configured === undefined ? 'no task in this store names it' : 'not in the config, and no stored task names it';
  throw new CliFailure(`no agent ${agent}: ${whose}; the known agents: ${known.join(', ') || 'none'}${near === undefined ? '' : `; did you mean "${near}"?`}`);
}

/**
 * `a2a-mailbridge tasks`: lists tasks of every agent from the store, opened read-only, newest
 * status first; `--limit` defaults to 50. The WHY of a task whose webhook attempt is due in the
 * past starts with "no bridge running" when this config's bridge is not running.
 * @returns the exit code (0)
 * @throws UsageError for a bad filter, CliFailure for an `--agent` no one knows ({@link checkAgentKnown}),
 *   ConfigError/StoreError when the store cannot be opened
 */
export function runTasks(where: StoreLocation, o: TasksOptions, now = Date.now()): number {
  const q = {
    limit: o.limit === undefined ? 50 : parseCount(o.limit, '--limit', 1, 1_000_000, 'tasks'),
    ...(o.agent !== undefined ? { agent: o.agent } : {}),
    ...(o.state !== undefined ? { states: parseStates(o.state, '--state') } : {}),
    ...(o.context !== undefined ? { contextId: o.context } : {}),
    ...(o.since !== undefined ? { updatedSince: parseTime(o.since, now, '--since') } : {}),
  };
  const db = openReadOnly(where);
  try {
    const rows = db.tasks.rows(q);
    if (rows.length === 0 && o.agent !== undefined) checkAgentKnown(db, where, o.agent);
    const stalled = noBridgeRuns(db, rows, where, now) ? { now } : undefined;
    if (o.json) printJson(rows.map((t) => ({ ...taskJson(t), why: whyText(db, t, stalled) })));
    else process.stdout.write(`${formatTasks(rows, (t) => whyText(db, t, stalled))}\n`);
    return 0;
  } finally {
    db.close();
  }
}
