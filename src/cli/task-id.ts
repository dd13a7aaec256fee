/**
 * How the CLI finds a task from what a person typed: the whole id, or a unique prefix of at least
 * 4 characters — the tables print the first 8 — in any case (ids are lower-case UUIDs).
 */
import type { StoreReads } from '../store/store.js';
import { CliFailure } from './errors.js';

/** The shortest prefix the CLI takes. */
export const MIN_PREFIX = 4;

function several(text: string, ids: readonly string[]): CliFailure {
  return new CliFailure(`${text} matches several tasks (${ids.slice(0, 5).join(', ')}${ids.length > 5 ? ', …' : ''}); give more of the id`);
}

/**
 * The task with this id, or the one task whose id starts with it (at least {@link MIN_PREFIX}
 * characters, case-blind).
 * @returns the whole id, or undefined when no task matches
 * @throws CliFailure when several tasks match
 */
export function resolveTaskId(db: StoreReads, idOrPrefix: string): string | undefined {
  const text = idOrPrefix.trim().toLowerCase();
  if (db.tasks.get(text)) return text;
  if (text.length < MIN_PREFIX) return undefined;
  const ids = db.tasks.idsWithPrefix(text, 6);
  if (ids.length > 1) throw several(idOrPrefix, ids);
  return ids[0];
}

/**
 * The task id `ledger --task` filters on: a task's (by id or unique prefix), else the task id that
 * tagged mail in the ledger names (mail may name a task that never existed, or one pruned since).
 *
 * @param tasksCommand the `tasks` command the error suggests, for the same store (open-store.ts storeCommand)
 * @throws CliFailure when nothing matches ("no such task"), or several ids do
 */
export function resolveLedgerTask(db: StoreReads, idOrPrefix: string, tasksCommand = 'a2a-mailbridge tasks'): string {
  const task = resolveTaskId(db, idOrPrefix);
  if (task !== undefined) return task;
  const text = idOrPrefix.trim().toLowerCase();
  const ids = text.length === 0 ? [] : db.ledger.taskIdsWithPrefix(text, text.length >= MIN_PREFIX, 6);
  if (ids.length > 1) throw several(idOrPrefix, ids);
  if (ids.length === 1) return ids[0]!;
  const hint = text.length < MIN_PREFIX ? ` (a prefix needs at least ${MIN_PREFIX} characters)` : '';
  throw new CliFailure(`no such task: ${idOrPrefix}${hint}, and no mail in the ledger names it; list the tasks with: ${tasksCommand}`);
}
