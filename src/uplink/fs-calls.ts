/**
 * The file-system calls of the Maildir's reads and deliveries: node:fs's callback calls,
 * promisified. Not node:fs/promises: that module brings 7 more of Node's internal modules
 * (readline among them) into every start, and the Maildir modules load with every `serve`
 * (docs/architecture.md, "Start-up and memory"). Each rejects with the call's own error (`code`:
 * ENOENT, EACCES…), as node:fs/promises does.
 */
import * as fs from 'node:fs';
import { promisify } from 'node:util';

export const lstat = promisify(fs.lstat);
export const stat = promisify(fs.stat);
export const readdir = promisify(fs.readdir);
/** Opens a file; resolves with its descriptor, which the caller closes with {@link close}. */
export const open = promisify(fs.open);
export const fstat = promisify(fs.fstat);
export const read = promisify(fs.read);
export const writeFile = promisify(fs.writeFile);
export const fsync = promisify(fs.fsync);
export const close = promisify(fs.close);
export const mkdir = promisify(fs.mkdir);
export const rename = promisify(fs.rename);
export const unlink = promisify(fs.unlink);
