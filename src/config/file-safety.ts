import { statSync, type Stats } from 'node:fs';

/**
 * Whether others than the owner may change what a path holds, by its stat: group or other write
 * permission (`mode & 0o022`). A folder with the sticky bit (like /tmp) is not counted: others
 * may add files there but not replace or rename ours (the rule ssh's StrictModes and `doctor` apply).
 *
 * @returns the octal mode (`0775`) when others can write it, else null
 */
export function othersCanWrite(st: Stats): string | null {
  const mode = st.mode & 0o777;
  if ((mode & 0o022) === 0) return null;
  if (st.isDirectory() && (st.mode & 0o1000) !== 0) return null;
  return mode.toString(8).padStart(4, '0');
}

/**
 * {@link othersCanWrite} of the path (a symlink followed).
 *
 * @returns the octal mode (`0775`) when others can write it, else null
 * @throws the stat error (ENOENT, EACCES) as is
 */
export function writableByOthers(path: string): string | null {
  return othersCanWrite(statSync(path));
}
