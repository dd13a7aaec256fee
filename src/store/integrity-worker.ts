/**
 * The worker thread of integrity.ts: opens the store file read-only, only while its path names the
 * file the bridge opened (file-identity.ts), runs quick_check, posts the result and exits.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { NotTheStoreFileError, openIfSame } from './file-identity.js';
import { integrityResult, quickCheckReport, type IntegrityResult } from './integrity.js';

const { path, identity } = workerData as { path: string; identity: string };
let result: IntegrityResult;
try {
  const db = openIfSame(path, identity, { readonly: true });
  try {
    result = integrityResult(quickCheckReport(db));
  } finally {
    db.close();
  }
} catch (err) {
  result = err instanceof NotTheStoreFileError ? { ok: false, detail: err.message, away: true } : { ok: false, detail: (err as Error).message };
}
parentPort!.postMessage(result);
