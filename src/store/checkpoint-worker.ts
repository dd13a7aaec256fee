/**
 * The worker thread of checkpointer.ts: its own connection to the store file, on which it runs a
 * `PRAGMA wal_checkpoint(PASSIVE)` each time it is asked, and posts what it did. When that copied
 * the whole log and the log file is over its size limit (a reader held a snapshot while it grew:
 * wal.ts), it also truncates the file (`TRUNCATE`, never waiting: busy timeout 0, so a writer or
 * reader of the moment makes it return at once and a later checkpoint tries again).
 */
import Database from 'better-sqlite3';
import { statSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import type { FromCheckpointer } from './checkpointer.js';
import { WAL_LIMIT_BYTES } from './wal.js';

const { path } = workerData as { path: string };
const port = parentPort!;
const db = new Database(path, { fileMustExist: true });
db.pragma('busy_timeout = 0');

function walFileBytes(): number {
  try {
    return statSync(`${path}-wal`).size;
  } catch {
    return 0;
  }
}

port.on('message', () => {
  let reply: FromCheckpointer;
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
    const log = r?.log ?? 0;
    const checkpointed = r?.checkpointed ?? 0;
    if (log > 0 && checkpointed === log && walFileBytes() > WAL_LIMIT_BYTES) {
      try {
        db.pragma('wal_checkpoint(TRUNCATE)');
      } catch {
        // SQLITE_BUSY: a writer holds its lock now; the next checkpoint tries again
      }
    }
    reply = { type: 'done', log, checkpointed };
  } catch (err) {
    reply = { type: 'failed', message: (err as Error).message };
  }
  port.postMessage(reply);
});
