/**
 * The Maildir reader's small reads on the main thread: the first read of a file's header block
 * (open, fstat, read, close as synchronous calls, into one buffer reused by every file) and the
 * slices they are made in, the event loop answering between two slices.
 *
 * Why not the thread pool: a flood of untagged junk is decided file by file on at most 64 KiB
 * each, and on libuv's thread pool (node:fs callbacks) each file cost four round trips (open,
 * fstat, read, close, plus the lstat that orders it) and a fresh buffer: 0.4–0.57 ms a file under
 * load, 12 s for 21,000 files. The same calls made synchronously cost a few µs each on a local
 * file system (bench/maildir-junk.ts, docs/architecture.md "The header stage"). The price: while
 * one call runs the event loop waits for it, so a Maildir on a network file system that stops
 * answering stalls the bridge, not a pool thread; a Maildir is meant to be local (README). Large
 * reads (a header block to 256 KiB, a whole message) stay on the thread pool.
 *
 * The same safety as the thread-pool read (maildir-files.ts `readFileStart`): opened with
 * O_NOFOLLOW and O_NONBLOCK (a symlink or FIFO swapped in after the listing is skipped, never
 * followed or waited on), fstat'ed to be a regular file, only read; an error about one file is a
 * value (`readFailure`), one about the process throws.
 */
import * as fs from 'node:fs';
import { HEAD_STEP_BYTES, headOf, OPEN_FLAGS, readFailure, type HeadRead } from './maildir-files.js';
import { headerEnd } from './raw-headers.js';
import { monotonicMs } from '../monotonic.js';

/** Bytes read between two yields to the event loop, at most (a slice holds at least one file). */
export const SLICE_BYTES = 1024 * 1024;
/** Files lstat'ed or read between two yields, at most. */
export const SLICE_FILES = 256;
/**
 * Time a slice may hold the event loop, in ms on the monotonic clock: past it the next file waits
 * for the next turn (a file read from a cold disk, or a candidate's scan, can cost far more than
 * a file of junk in the page cache).
 */
export const SLICE_MS = 4;

/** The buffer every {@link readHeadSync} reads into; grown to the largest cap asked (64 KiB: the narrowing's). */
let scratch = Buffer.allocUnsafe(0);

/**
 * A file's first bytes, to `cap`, cut after the empty line that ends its header block, and
 * whether the block runs on past them; or why they cannot be read (maildir-files.ts
 * `readHeaderStart`, the same answer). Read in steps of 16 KiB, stopping at the end of the header
 * block. The `header` returned is a view of a buffer the next call overwrites: copy what is kept.
 * @throws MailboxError io on a process-wide shortage (EMFILE…)
 */
export function readHeadSync(path: string | Buffer, cap: number): HeadRead {
  let fd: number | undefined;
  try {
    fd = fs.openSync(path, OPEN_FLAGS);
    const st = fs.fstatSync(fd);
    if (!st.isFile()) return { skip: true };
    const want = Math.min(cap, st.size);
    if (scratch.length < want) scratch = Buffer.allocUnsafe(want);
    let got = 0;
    let end = -1;
    while (got < want) {
      const n = fs.readSync(fd, scratch, got, Math.min(want - got, HEAD_STEP_BYTES), got);
      if (n === 0) break;
      got += n;
      end = headerEnd(scratch.subarray(0, got));
      if (end >= 0) break;
    }
    return headOf(scratch.subarray(0, got), st.size, end);
  } catch (err) {
    return readFailure(path, err);
  } finally {
    if (fd !== undefined) {
      try {
        fs.closeSync(fd);
      } catch {
        // nothing left to do with it
      }
    }
  }
}

/**
 * One slice of main-thread reads: counts files and bytes and, once it holds {@link SLICE_FILES}
 * files, {@link SLICE_BYTES} bytes or {@link SLICE_MS} ms, says it is spent; `next()` then yields
 * to the event loop (setImmediate: after the pending I/O callbacks, so HTTP calls are answered)
 * and starts the next slice.
 */
export class Slice {
  #from = monotonicMs();
  #files = 0;
  #bytes = 0;

  /** Counts one file and the bytes it read; true when the slice is spent (call `next()`). */
  spent(bytes: number): boolean {
    this.#files++;
    this.#bytes += bytes;
    return this.#files >= SLICE_FILES || this.#bytes >= SLICE_BYTES || monotonicMs() - this.#from >= SLICE_MS;
  }

  /** Yields to the event loop, then starts a new slice. */
  async next(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    this.#from = monotonicMs();
    this.#files = 0;
    this.#bytes = 0;
  }
}
