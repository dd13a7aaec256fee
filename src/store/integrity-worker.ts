/**
 * The worker thread of integrity.ts: opens the store file read-only, runs quick_check, posts the
 * result and exits.
 */
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { integrityResult, quickCheckReport, type IntegrityResult } from './integrity.js';

const { path } = workerData as { path: string };
let result: IntegrityResult;
try {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    result = integrityResult(quickCheckReport(db));
  } finally {
    db.close();
  }
} catch (err) {
  result = { ok: false, detail: (err as Error).message };
}
parentPort!.postMessage(result);
