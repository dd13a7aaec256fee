/**
 * The SHA-256 of a raw message (gate 1's digest, ledger.raw_sha256) without one long stall: a
 * message of more than {@link DIGEST_SLICE_BYTES} is hashed a slice at a time, with a turn of the
 * event loop between slices, so `/health` and A2A calls are answered while a 10 MB reply is hashed
 * (in one piece it held the event loop for 10–30 ms: bench/RESULTS.md, reply-parse).
 */
import { createHash } from 'node:crypto';

/** Bytes hashed between two turns of the event loop (well under a millisecond of SHA-256). */
export const DIGEST_SLICE_BYTES = 256 * 1024;

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * The SHA-256 of `raw`, lowercase hex: the same as `createHash('sha256').update(raw)`, taken in
 * slices of `sliceBytes` with a turn of the event loop between them.
 * @param sliceBytes default {@link DIGEST_SLICE_BYTES}
 */
export async function sha256Sliced(raw: Uint8Array, sliceBytes = DIGEST_SLICE_BYTES): Promise<string> {
  const hash = createHash('sha256');
  for (let at = 0; at < raw.length; at += sliceBytes) {
    if (at > 0) await turn();
    hash.update(raw.subarray(at, at + sliceBytes));
  }
  return hash.digest('hex');
}
