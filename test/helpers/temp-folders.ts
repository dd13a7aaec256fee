import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

/** The uid of "another user" in the tests of the file-place rules (Debian's `nobody`); they chown to it as root. */
export const NOBODY = 65534;

/**
 * Temporary folders for one test file, each removed after the test that made or named it. Call at
 * the file's top level (it registers an `afterEach`).
 * - `folder(mode)`: a new folder in the system's temporary folder (`prefix` + random) with `mode`;
 * - `removeAfter(dir)`: removes `dir` (a config folder made elsewhere) after the test too.
 */
export function tempFolders(prefix: string): { folder: (mode: number) => string; removeAfter: (dir: string) => void } {
  const made: string[] = [];
  afterEach(() => {
    for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  return {
    folder: (mode) => {
      const d = mkdtempSync(join(tmpdir(), prefix));
      chmodSync(d, mode);
      made.push(d);
      return d;
    },
    removeAfter: (dir) => {
      made.push(dir);
    },
  };
}
