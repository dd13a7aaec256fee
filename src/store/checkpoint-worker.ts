/**
 * The worker thread of checkpointer.ts: its own connection to the store file, on which it runs a
 * `PRAGMA wal_checkpoint(PASSIVE)` each time it is asked, and posts what it did.
 *
 * It opens the path only while it names the file the bridge opened (file-identity.ts,
 * `openIfSame`): a store file replaced under the bridge is never opened with the bridge's -wal,
 * whose pages a checkpoint would copy into it. Then it posts `refused` and ends itself (its
 * connection, if any, is closed before any statement ran), else `ready` once its connection is
 * open. It ends itself on `stop` (closes the connection and its port, so the thread exits with
 * code 0): the parent never terminates it while it loads the SQLite addon, which aborts the whole
 * process (checkpointer.ts, `close`).
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { FromCheckpointer, ToCheckpointer } from './checkpointer.js';
import { NotTheStoreFileError, openIfSame } from './file-identity.js';

const { path, identity } = workerData as { path: string; identity: string };
const port = parentPort!;

/** The connection, or null when the path no longer names the bridge's file (posted as `refused`). */
function open(): ReturnType<typeof openIfSame> | null {
  try {
    return openIfSame(path, identity);
  } catch (err) {
    if (!(err instanceof NotTheStoreFileError)) throw err;
    port.postMessage({ type: 'refused', message: err.message } satisfies FromCheckpointer);
    port.close();
    return null;
  }
}

const db = open();
if (db) {
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
}
