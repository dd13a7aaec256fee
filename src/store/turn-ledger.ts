/**
 * Where a turn's mail begins in the ledger: `turns.ledger_after`, the id of the newest refused row
 * naming the task when the turn began (0: none), written by the turn's insert. A row naming the
 * task with a higher id was recorded during the turn, whatever the clock did: `ledger.refusedRepliesOf`
 * reads the turn's refused mail as ranges `id > ledger_after` of ledger_by_task_verdict, one a
 * refused verdict. Before, the range began at the first row *seen* at or after the turn's
 * `created_at`, which relied on ids rising with `seen_at`: after the clock stepped back, mail of
 * the turn seen "before" it began was left out, and mail of the turn before counted.
 *
 * Why the task's newest row, not the ledger's: ledger ids are SQLite rowids (`max + 1`, no
 * AUTOINCREMENT), so a prune that deletes the ledger's newest rows lets later rows take ids below
 * the ledger's old maximum. A row naming a task stays as long as the task does (src/store/prune.ts:
 * rows of a task that stays are kept), so every row recorded after it has a higher id.
 */
import { VERDICTS, type Verdict } from '../uplink/verdicts.js';

/** The verdicts a turn's refused mail is counted by: every one but `applied:*`, `late:recorded` and `duplicate` (a copy of mail judged before). */
export const REFUSED_VERDICTS = (Object.keys(VERDICTS) as Verdict[]).filter((v) => !v.startsWith('applied:') && v !== 'late:recorded' && v !== 'duplicate');

/**
 * The value of `ledger_after` for a turn of task `@taskId` inserted now: the newest refused row
 * naming the task (0: none), one step of ledger_by_task_verdict a refused verdict (the rowid ends
 * each index entry), whatever the number of rows naming the task: 0.3-0.4 ms with 270,000 rows
 * naming it and with none alike (load average 4.8), against 17 ms for a count of those rows.
 */
export const LEDGER_AFTER_SQL = `max(0, ${REFUSED_VERDICTS.map(
  (v) => `coalesce((SELECT max(id) FROM ledger INDEXED BY ledger_by_task_verdict WHERE task_id = @taskId AND verdict = '${v}'), 0)`,
).join(', ')})`;

/**
 * Migration 19: `turns.ledger_after`. A turn written before it gets the newest row naming its task
 * seen before the turn's `created_at` (0: none): the rows of the task it counted before (seen at
 * or after its start) are the ones above, and a row recorded later gets a higher id, as the task's
 * rows stay while it does (module comment). Not the ledger's own newest row: a prune of the
 * ledger's newest junk let later replies take ids below it, uncounted (attack review 9). Turns
 * written since get {@link LEDGER_AFTER_SQL}. Written out here, never from the verdict table, so
 * the shipped migration stays as it is.
 */
export const TURN_LEDGER_MIGRATION = `
  ALTER TABLE turns ADD COLUMN ledger_after INTEGER NOT NULL DEFAULT 0;
  UPDATE turns SET ledger_after = coalesce(
    (SELECT max(id) FROM ledger WHERE task_id = turns.task_id AND seen_at < turns.created_at),
    0);
`;
