/**
 * The worker thread of checkpointer.ts: its own connection to the store file, on which it runs a
 * `PRAGMA wal_checkpoint(PASSIVE)` each time it is asked, and posts what it did.
 */
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import type { FromCheckpointer } from './checkpointer.js';

const { path } = workerData as { path: string };
const port = parentPort!;
const db = new Database(path, { fileMustExist: true });

port.on('message', () => {
  let reply: FromCheckpointer;
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
    reply = { type: 'done', log: r?.log ?? 0, checkpointed: r?.checkpointed ?? 0 };
  } catch (err) {
    reply = { type: 'failed', message: (err as Error).message };
  }
  port.postMessage(reply);
});
