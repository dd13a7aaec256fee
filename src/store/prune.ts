/**
 * Retention (`a2a-mailbridge prune`): finished tasks and old ledger rows go; an open
 * task — and every row it relies on — stays, however old.
 *
 * A task is prunable when its state is terminal, its status timestamp (`updated_at`, when it
 * finished) is before the cut, and no task event is newer than the cut — a deadline-failed task
 * that kept a late reply yesterday (a note event) stays. (Terminal states are sticky; the one
 * exception, an operator's `retry` of a task that failed by dispatch, runs in its own transaction
 * and then finds the task gone, or prune finds it open.) It goes with its turns, dispatch
 * attempts, messages, artifacts, replies (with their attachments) and task events. Its audit entries stay: the audit is the record
 * of what happened, and `show` still prints it for a pruned task.
 *
 * A ledger row is prunable when it was seen before the cut and belongs to no task that stays
 * (no task, an unknown task, or a prunable one). So the rows behind gate 1 (same raw bytes) and
 * gate 8a (Message-ID already applied) are kept for every open task. A row that goes whose Maildir
 * file is still in its folder is kept thin instead (prune-thin.ts), so that file is not judged again.
 */
import type { Db, Writer } from './db.js';
import { deleteOrThin, THIN_DIGEST, type GoingRow, type HeldSources } from './prune-thin.js';
import { stmt } from './statements.js';
import { TASK_STATES, TERMINAL_STATES } from './task-state.js';

/** Rows deleted (or, for a dry run, that would be) per table; and ledger rows kept thin instead (prune-thin.ts). */
export interface PruneCounts {
  tasks: number;
  turns: number;
  attempts: number;
  messages: number;
  artifacts: number;
  replies: number;
  attachments: number;
  events: number;
  ledger: number;
  /** Ledger rows that go but whose Maildir file is still there: thinned, not deleted (one thin already is neither). */
  ledgerThinned: number;
}

const TERMINAL = [...TERMINAL_STATES].map((s) => `'${s}'`).join(', ');
/** True for the task row `t` when it goes; `@cut` is the cut in ms since the epoch. */
const FINISHED_BEFORE_CUT = `(t.state IN (${TERMINAL}) AND t.updated_at < @cut
  AND NOT EXISTS (SELECT 1 FROM task_events e WHERE e.task_id = t.id AND e.at >= @cut))`;
/** Ids of the tasks that go. */
const PRUNABLE_TASKS = `SELECT t.id FROM tasks t WHERE ${FINISHED_BEFORE_CUT}`;
/** Ledger rows that go: older than the cut and not tied to a task that stays. */
const PRUNABLE_LEDGER = `seen_at < @cut AND (task_id IS NULL OR NOT EXISTS (
  SELECT 1 FROM tasks t WHERE t.id = ledger.task_id AND NOT ${FINISHED_BEFORE_CUT}))`;

/** Table and WHERE clause per count; the ledger clause must be evaluated before the tasks are deleted. */
const TARGETS: readonly [keyof PruneCounts, string, string][] = [
  ['ledger', 'ledger', PRUNABLE_LEDGER],
  ['turns', 'turns', `task_id IN (${PRUNABLE_TASKS})`],
  ['attempts', 'dispatch_attempts', `task_id IN (${PRUNABLE_TASKS})`],
  ['messages', 'messages', `task_id IN (${PRUNABLE_TASKS})`],
  ['artifacts', 'artifacts', `task_id IN (${PRUNABLE_TASKS})`],
  ['replies', 'replies', `task_id IN (${PRUNABLE_TASKS})`],
  ['attachments', 'reply_attachments', `task_id IN (${PRUNABLE_TASKS})`],
  ['events', 'task_events', `task_id IN (${PRUNABLE_TASKS})`],
  ['tasks', 'tasks', `id IN (${PRUNABLE_TASKS})`],
];

function empty(): PruneCounts {
  return { tasks: 0, turns: 0, attempts: 0, messages: 0, artifacts: 0, replies: 0, attachments: 0, events: 0, ledger: 0, ledgerThinned: 0 };
}

/**
 * The tables a task's rows live in: the count, its column in `tasks`, the total migration 11's
 * triggers keep. Migration 14 is written from this list: a table added here needs a migration of
 * its own (its column, its triggers, the index), never a change to that one.
 */
const DEPENDENTS: readonly [Exclude<keyof PruneCounts, 'tasks' | 'ledger' | 'ledgerThinned'>, string, string, string][] = [
  ['turns', 'turns', 'n_turns', `SELECT coalesce(sum(n), 0) AS n FROM dispatch_counts`],
  ['attempts', 'dispatch_attempts', 'n_attempts', `SELECT n FROM row_counts WHERE name = 'dispatch_attempts'`],
  ['messages', 'messages', 'n_messages', `SELECT n FROM row_counts WHERE name = 'messages'`],
  ['artifacts', 'artifacts', 'n_artifacts', `SELECT n FROM row_counts WHERE name = 'artifacts'`],
  ['replies', 'replies', 'n_replies', `SELECT n FROM row_counts WHERE name = 'replies'`],
  ['attachments', 'reply_attachments', 'n_attachments', `SELECT n FROM row_counts WHERE name = 'reply_attachments'`],
  ['events', 'task_events', 'n_events', `SELECT n FROM row_counts WHERE name = 'task_events'`],
];

/**
 * Migration 14: each task's rows per table (turns, dispatch attempts, messages, artifacts, replies,
 * attachments, task events) in columns of its task row, kept by triggers in the transaction of
 * every insert and delete, and held by the index of finished tasks by time (tasks_by_state_time),
 * so prune's counts are sums over a range of that index instead of a look-up per task in every
 * table (1.1 s for 43,000 tasks that stay: bench/RESULTS.md, million). That index also holds
 * `created_at`, the ledger's task index `seen_at`, and the notes (events that change no state:
 * `tasks.note`) have an index of their own, for the counts' look-ups below.
 */
export const TASK_ROWS_MIGRATION = [
  ...DEPENDENTS.map(([, , col]) => `ALTER TABLE tasks ADD COLUMN ${col} INTEGER NOT NULL DEFAULT 0;`),
  ...DEPENDENTS.map(([, table, col]) => `UPDATE tasks SET ${col} = c.n FROM (SELECT task_id, count(*) AS n FROM ${table} GROUP BY task_id) AS c WHERE c.task_id = tasks.id;`),
  ...DEPENDENTS.flatMap(([, table, col]) => [
    `CREATE TRIGGER task_rows_${table}_insert AFTER INSERT ON ${table} BEGIN UPDATE tasks SET ${col} = ${col} + 1 WHERE id = new.task_id; END;`,
    `CREATE TRIGGER task_rows_${table}_delete AFTER DELETE ON ${table} BEGIN UPDATE tasks SET ${col} = ${col} - 1 WHERE id = old.task_id; END;`,
  ]),
  'DROP INDEX tasks_by_state_time;',
  `CREATE INDEX tasks_by_state_time ON tasks(state, updated_at, created_at, ${DEPENDENTS.map(([, , col]) => col).join(', ')});`,
  'CREATE INDEX task_events_notes ON task_events(at, task_id) WHERE from_state IS to_state;',
  'DROP INDEX ledger_by_task;',
  'CREATE INDEX ledger_by_task ON ledger(task_id, message_id, seen_at);',
].join('\n');

/** A set of tasks' count and their rows per table, summed from their task rows. */
const SUMS = `count(*) AS tasks, ${DEPENDENTS.map(([key, , col]) => `coalesce(sum(${col}), 0) AS ${key}`).join(', ')}`;
/** Finished tasks whose status timestamp is before the cut, whatever their events (a range of tasks_by_state_time). */
const FINISHED_BEFORE = `state IN (${TERMINAL}) AND updated_at < @cut`;
/**
 * Tasks with a note at or after the cut (task_events_notes). Of a task finished before the cut,
 * every event since is a note: any other event is a state change, which moves `updated_at` to its
 * time (task-rows.ts `transition`; the bridge's clock does not go back).
 */
const NOTED_SINCE = `SELECT task_id FROM task_events WHERE from_state IS to_state AND at >= @cut`;
const OPEN = TASK_STATES.filter((st) => !TERMINAL_STATES.has(st)).map((st) => `'${st}'`).join(', ');
/**
 * The tasks that stay and were created before the cut: open, finished at or after the cut, or
 * noted since — each an index range. Mail that names a task is seen after the task was created (its
 * id is drawn then), so only these can have ledger rows seen before the cut.
 */
const STAYING_SINCE_BEFORE = `SELECT id FROM tasks WHERE state IN (${OPEN}) AND created_at < @cut
  UNION ALL SELECT id FROM tasks WHERE state IN (${TERMINAL}) AND updated_at >= @cut AND created_at < @cut UNION ALL ${NOTED_SINCE}`;

type Sums = Omit<PruneCounts, 'ledger' | 'ledgerThinned'>;

export function pruneReads(db: Db) {
  const one = (sql: string, cut: number): number => (stmt(db, sql).get({ cut }) as { n: number } | undefined)?.n ?? 0;
  const sums = (where: string, cut: number, index = ''): Sums => stmt(db, `SELECT ${SUMS} FROM tasks ${index} WHERE ${where}`).get({ cut }) as Sums;
  /** The finished tasks on one side of the cut, counted up to `limit` (a walk of at most `limit` index entries). */
  const upTo = (where: string, cut: number, limit: number): number =>
    (stmt(db, `SELECT count(*) AS n FROM (SELECT 1 FROM tasks WHERE ${where} LIMIT @limit)`).get({ cut, limit }) as { n: number }).n;
  /**
   * Whether fewer finished tasks lie before the cut than at or after it: both sides counted up to a
   * limit that grows fourfold until one side ends below it, so the walk follows the smaller side
   * (at most about 2.7 times its size), whichever it is.
   */
  const beforeIsSmaller = (cut: number): boolean => {
    for (let limit = 1024; ; limit *= 4) {
      const before = upTo(FINISHED_BEFORE, cut, limit);
      if (before < limit) return before <= upTo(`state IN (${TERMINAL}) AND updated_at >= @cut`, cut, before + 1);
      if (upTo(`state IN (${TERMINAL}) AND updated_at >= @cut`, cut, limit) < limit) return false;
    }
  };
  return {
    /**
     * The Maildir folders (`mailbox_state.folder`, the path as configured) the ledger has rows of
     * (`maildir:<folder>:…`, a range of the source index each): what prune lists to know which of
     * their files are still there (prune-thin.ts).
     */
    maildirFolders(): string[] {
      return stmt(db, `SELECT folder FROM mailbox_state m WHERE EXISTS (SELECT 1 FROM ledger WHERE source >= 'maildir:' || m.folder || ':' AND source < 'maildir:' || m.folder || ';')`).pluck().all() as string[];
    },

    /**
     * What `prune` would delete for this cut; reads only, so a read-only store will do. Each task
     * row holds its rows per table (migration 14), so the counts are sums over ranges of the index
     * of tasks by state and time, taken on the smaller side: the tasks that go (finished before the
     * cut, less those noted since), or every row (the totals triggers keep) less the rows of the
     * tasks that stay (open, finished since the cut, noted since). Every row of a table here
     * belongs to a task: the writes add them with their task, and prune deletes them with it.
     * Bench: bench/RESULTS.md, million.
     * Of the ledger rows that go, those `held` are counted as thinned (`ledgerThinned`, one index
     * read each), not deleted; one thin already is neither.
     * @param cut ms since the epoch: tasks finished before it and ledger rows seen before it
     * @param held the sources of the Maildir files still in their folders (prune-thin.ts)
     */
    countPrunable(cut: number, held: HeldSources = new Set()): PruneCounts {
      const finishedAll = one(`SELECT coalesce(sum(n), 0) AS n FROM task_counts WHERE state IN (${TERMINAL})`, cut);
      const FINISHED_SINCE = `state IN (${TERMINAL}) AND updated_at >= @cut`;
      const fewGo = beforeIsSmaller(cut);
      // A look-up by id of each noted task (few), never a walk of the finished ones before the cut
      // (most of the store), which SQLite chose without the INDEXED BY (360 ms at a million).
      const noted = sums(`id IN (${NOTED_SINCE}) AND ${FINISHED_BEFORE}`, cut, 'INDEXED BY sqlite_autoindex_tasks_1');
      const out = empty();
      if (fewGo) {
        const before = sums(FINISHED_BEFORE, cut);
        out.tasks = before.tasks - noted.tasks;
        for (const [key] of DEPENDENTS) out[key] = before[key] - noted[key];
      } else {
        const after = sums(FINISHED_SINCE, cut);
        const open = sums(`state IN (${OPEN})`, cut);
        out.tasks = finishedAll - after.tasks - noted.tasks;
        for (const [key, , , total] of DEPENDENTS) out[key] = one(total, cut) - open[key] - after[key] - noted[key];
      }
      // Ledger rows seen before the cut (a range of ledger_by_time, or every row by the counts triggers
      // keep less those seen since), but those of a task that stays (ledger_by_task holds seen_at):
      // index walks, never a look-up per row (PRUNABLE_LEDGER took 14.7 s for 712,000 rows).
      const seenBefore = fewGo
        ? one(`SELECT count(*) AS n FROM ledger WHERE seen_at < @cut`, cut)
        : one(`SELECT coalesce(sum(n), 0) AS n FROM verdict_counts`, cut) - one(`SELECT count(*) AS n FROM ledger WHERE seen_at >= @cut`, cut);
      out.ledger = seenBefore - one(`SELECT count(*) AS n FROM ledger INDEXED BY ledger_by_task WHERE task_id IN (${STAYING_SINCE_BEFORE}) AND seen_at < @cut`, cut);
      const goes = stmt(db, `SELECT raw_sha256 = '${THIN_DIGEST}' AS thin FROM ledger WHERE source = @source AND ${PRUNABLE_LEDGER}`);
      for (const source of held) {
        const r = goes.get({ source, cut }) as { thin: number } | undefined;
        if (!r) continue;
        out.ledger--;
        if (r.thin !== 1) out.ledgerThinned++;
      }
      return out;
    },
  };
}

/** Tasks per transaction of a batched prune ({@link pruneInBatches}). */
export const PRUNE_BATCH_TASKS = 1000;
/** Ledger rows looked at per transaction of a batched prune. */
export const PRUNE_BATCH_LEDGER = 5000;

/** Each task's rows but the ledger's, by table, for a batch given as `@ids` (a JSON array). */
const BATCH_TARGETS: readonly [Exclude<keyof PruneCounts, 'ledger' | 'ledgerThinned'>, string, string][] = TARGETS.filter(([key]) => key !== 'ledger').map(
  ([key, table]) => [key as Exclude<keyof PruneCounts, 'ledger' | 'ledgerThinned'>, table, `${table === 'tasks' ? 'id' : 'task_id'} IN (SELECT value FROM json_each(@ids))`],
);

function add(into: PruneCounts, from: Partial<PruneCounts>): void {
  for (const [k, v] of Object.entries(from) as [keyof PruneCounts, number][]) into[k] += v;
}

/** The two steps of a batched prune, each run inside a transaction of its own ({@link pruneInBatches}). */
interface PruneSteps {
  pruneTasks(cut: number, limit: number, held?: HeldSources): PruneCounts;
  pruneLedger(cut: number, after: number, limit: number, held?: HeldSources): { ledger: number; ledgerThinned: number; last: number | null };
}

export function pruneWrites(w: Writer) {
  const writes: PruneSteps & { prune(cut: number, held?: HeldSources): PruneCounts } = {
    /**
     * Deletes up to `limit` tasks that go (the oldest first), with their rows and the ledger rows
     * seen before the cut that name them (thinned instead when `held`: prune-thin.ts); inside the
     * caller's transaction.
     * @param cut ms since the epoch
     * @returns the rows deleted per table (`tasks < limit`: none is left)
     */
    pruneTasks(cut: number, limit: number, held: HeldSources = new Set()): PruneCounts {
      const out = empty();
      const ids = (w.db.prepare(`${PRUNABLE_TASKS} ORDER BY t.updated_at LIMIT @limit`).pluck().all({ cut, limit }) as string[]);
      if (!ids.length) return out;
      const batch = { ids: JSON.stringify(ids), cut };
      const going = w.db.prepare(`SELECT id, source, raw_sha256 = '${THIN_DIGEST}' AS thin FROM ledger WHERE task_id IN (SELECT value FROM json_each(@ids)) AND seen_at < @cut`).all(batch) as GoingRow[];
      Object.assign(out, deleteOrThin(w, going, held));
      // A pruned task's push configurations and deliveries go with it (uncounted: they hold no evidence).
      for (const table of ['push_deliveries', 'push_configs']) w.db.prepare(`DELETE FROM ${table} WHERE task_id IN (SELECT value FROM json_each(@ids))`).run(batch);
      for (const [key, table, where] of BATCH_TARGETS) out[key] = w.db.prepare(`DELETE FROM ${table} WHERE ${where}`).run(batch).changes;
      return out;
    },

    /**
     * Deletes the ledger rows that go among the `limit` rows after id `after` (by id, so a whole
     * pass reads the ledger once), but thins those `held` (prune-thin.ts); inside the caller's transaction.
     * @returns the rows deleted and thinned, and the last id looked at (null: the ledger ends before the window)
     */
    pruneLedger(cut: number, after: number, limit: number, held: HeldSources = new Set()): { ledger: number; ledgerThinned: number; last: number | null } {
      const last = w.db.prepare(`SELECT max(id) FROM (SELECT id FROM ledger WHERE id > @after ORDER BY id LIMIT @limit)`).pluck().get({ after, limit }) as number | null;
      if (last === null) return { ledger: 0, ledgerThinned: 0, last: null };
      const window = `id > @after AND id <= @last AND ${PRUNABLE_LEDGER}`;
      if (!held.size) return { ledger: w.db.prepare(`DELETE FROM ledger WHERE ${window}`).run({ after, last, cut }).changes, ledgerThinned: 0, last };
      const going = w.db.prepare(`SELECT id, source, raw_sha256 = '${THIN_DIGEST}' AS thin FROM ledger WHERE ${window}`).all({ after, last, cut }) as GoingRow[];
      return { ...deleteOrThin(w, going, held), last };
    },

    /**
     * Deletes finished tasks (with their rows) and old ledger rows; inside the caller's
     * transaction, so a running bridge sees all of it or none (tests, a small store). The CLI
     * prunes in batches instead ({@link pruneInBatches}).
     * @param cut ms since the epoch: tasks finished before it and ledger rows seen before it
     * @param held the sources of the Maildir files still in their folders: thinned, not deleted
     * @returns the number of rows deleted (and thinned) per table
     */
    prune(cut: number, held?: HeldSources): PruneCounts {
      // The batches of the CLI, all inside the caller's one transaction.
      return pruneInBatches((fn) => fn({ retention: writes }), cut, undefined, held);
    },
  };
  return writes;
}

/**
 * `prune` on a store a bridge is using: the same deletions as `prune(cut)`, a batch of tasks (or
 * a window of the ledger) per transaction, so the bridge's own writes wait for one batch at most,
 * never for the whole prune (at a million tasks one transaction held the write lock for minutes,
 * past the bridge's 5 s busy timeout). Each batch is whole: a task goes with all its rows or not
 * at all; between batches the bridge sees some tasks gone and others not yet.
 *
 * @param tx runs one transaction (Store.tx)
 * @param sizes tasks and ledger rows per transaction (tests pass small ones)
 * @param held the sources of the Maildir files still in their folders: their rows are thinned, not deleted (prune-thin.ts)
 * @returns the rows deleted (and thinned) per table, as `countPrunable(cut, held)` counted them before
 */
export function pruneInBatches(
  tx: <T>(fn: (t: { retention: PruneSteps }) => T) => T,
  cut: number,
  sizes: { tasks: number; ledger: number } = { tasks: PRUNE_BATCH_TASKS, ledger: PRUNE_BATCH_LEDGER },
  held: HeldSources = new Set(),
): PruneCounts {
  const out = empty();
  for (let done = false; !done; ) {
    const c = tx((t) => t.retention.pruneTasks(cut, sizes.tasks, held));
    add(out, c);
    done = c.tasks < sizes.tasks;
  }
  for (let after: number | null = 0; after !== null; ) {
    const from: number = after;
    const c = tx((t) => t.retention.pruneLedger(cut, from, sizes.ledger, held));
    out.ledger += c.ledger;
    out.ledgerThinned += c.ledgerThinned;
    after = c.last;
  }
  return out;
}
