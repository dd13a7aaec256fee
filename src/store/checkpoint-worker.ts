/**
 * The worker thread of checkpointer.ts: its own connection to the store file, on which it runs a
 * `PRAGMA wal_checkpoint(PASSIVE)` each time it is asked, and posts what it did.
 *
 * It posts `ready` once its connection is open, and ends itself on `stop` (closes the connection
 * and its port, so the thread exits with code 0): the parent never terminates it while it loads
 * the SQLite addon, which aborts the whole process (checkpointer.ts, `close`).
 */
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import type { FromCheckpointer, ToCheckpointer } from './checkpointer.js';

const { path } = workerData as { path: string };
const port = parentPort!;
const db = new Database(path, { fileMustExist: true });
port.postMessage({ type: 'ready' } satisfies FromCheckpointer);

port.on('message', (m: ToCheckpointer) => {
  if (m === 'stop') {
    db.close();
    port.close();
    return;
  }
  let reply: FromCheckpointer;
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
    reply = { type: 'done', log: r?.log ?? 0, checkpointed: r?.checkpointed ?? 0 };
  } catch (err) {
    reply = { type: 'failed', message: (err as Error).message };
  }
  port.postMessage(reply);
});
