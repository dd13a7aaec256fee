import type { Db, Writer } from './db.js';
import { stmt } from './statements.js';

/** A text artifact built from an authenticated reply: the untrusted label line, then the body. */
export interface ArtifactRow {
  artifactId: string;
  taskId: string;
  turn: number;
  name: string;
  text: string;
  ledgerId: number | null;
  createdAt: number;
}

export function artifactReads(db: Db) {
  return {
    of(taskId: string): ArtifactRow[] {
      return stmt(db,
        `SELECT artifact_id AS artifactId, task_id AS taskId, turn, name, text, ledger_id AS ledgerId, created_at AS createdAt
         FROM artifacts WHERE task_id = ? ORDER BY created_at, rowid`,
      ).all(taskId) as ArtifactRow[];
    },
  };
}

export function artifactWrites(w: Writer) {
  return {
    insert(a: ArtifactRow): void {
      stmt(w.db,
        `INSERT INTO artifacts (artifact_id, task_id, turn, name, text, ledger_id, created_at)
         VALUES (@artifactId, @taskId, @turn, @name, @text, @ledgerId, @createdAt)`,
      ).run(a);
    },
  };
}
