/**
 * The file-system calls of the Maildir's reads and deliveries: node:fs's callback calls,
 * promisified. Not node:fs/promises: that module brings 7 more of Node's internal modules
 * (readline among them) into every start, and the Maildir modules load with every `serve`
 * (docs/architecture.md, "Start-up and memory"). Each rejects with the call's own error (`code`:
 * ENOENT, EACCES…), as node:fs/promises does. Each call is one round trip to libuv's thread pool,
 * counted ({@link poolCalls}).
 */
import * as fs from 'node:fs';
import { promisify } from 'node:util';

let calls = 0;

/** `f`, each call counted into {@link poolCalls}. */
function counted<F extends (...args: never[]) => Promise<unknown>>(f: F): F {
  return ((...args: Parameters<F>) => {
    calls++;
    return f(...args);
  }) as F;
}

/**
 * Calls made through this module since the process started: thread-pool round trips of the
 * Maildir's reads (a test's seam: work, not time; maildir-sync-reads.ts says why the first read of
 * each file makes none).
 */
export function poolCalls(): number {
  return calls;
}

export const lstat = counted(promisify(fs.lstat));
export const stat = counted(promisify(fs.stat));
export const readdir = counted(promisify(fs.readdir));
/** Opens a file; resolves with its descriptor, which the caller closes with {@link close}. */
export const open = counted(promisify(fs.open));
export const fstat = counted(promisify(fs.fstat));
export const read = counted(promisify(fs.read));
export const writeFile = counted(promisify(fs.writeFile));
export const fsync = counted(promisify(fs.fsync));
export const close = counted(promisify(fs.close));
export const mkdir = counted(promisify(fs.mkdir));
export const rename = counted(promisify(fs.rename));
export const unlink = counted(promisify(fs.unlink));
