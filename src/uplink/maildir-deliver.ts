import { hostname } from 'node:os';
import { join } from 'node:path';
import { close, fsync, mkdir, open, rename, unlink, writeFile } from './fs-calls.js';

let deliveries = 0;

/**
 * Delivers one message into a Maildir the Maildir way: written and fsync'ed under `tmp/`, then
 * renamed into `new/` (so a reader never sees half a file). The name is
 * `<seconds>.M<microseconds>P<pid>Q<n>.<host>,S=<size>` (the Maildir convention; `/` and `:`
 * in the host name written as `\057` and `\072`). Creates `tmp/`, `new/` and `cur/` when missing.
 * File mode 0600.
 *
 * @param dir the Maildir folder (holding tmp/, new/, cur/)
 * @param raw the message bytes, kept exactly
 * @returns the path of the delivered file under `new/`
 * @throws the file-system error (e.g. EACCES) as is
 */
export async function deliverToMaildir(dir: string, raw: Buffer | string): Promise<string> {
  const bytes = typeof raw === 'string' ? Buffer.from(raw) : raw;
  for (const sub of ['tmp', 'new', 'cur']) await mkdir(join(dir, sub), { recursive: true, mode: 0o700 });
  const micros = BigInt(Math.floor((performance.timeOrigin + performance.now()) * 1000));
  const seconds = micros / 1_000_000n;
  const host = hostname().replace(/\//g, '\\057').replace(/:/g, '\\072') || 'localhost';
  const usec = String(micros % 1_000_000n).padStart(6, '0'); // padded: names sort in delivery order
  const name = `${seconds}.M${usec}P${process.pid}Q${++deliveries}.${host},S=${bytes.length}`;
  const tmpPath = join(dir, 'tmp', name);
  const newPath = join(dir, 'new', name);
  const fd = await open(tmpPath, 'wx', 0o600);
  try {
    await writeFile(fd, bytes);
    await fsync(fd);
  } catch (err) {
    await close(fd).catch(() => undefined);
    await unlink(tmpPath).catch(() => undefined);
    throw err;
  }
  await close(fd);
  await rename(tmpPath, newPath);
  return newPath;
}
