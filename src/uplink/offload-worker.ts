/**
 * The worker thread of offload.ts: runs the jobs it is sent and posts their results. A `dkim`
 * job's key lookups are asked of the main thread, which holds the resolver.
 */
import { parentPort } from 'node:worker_threads';
import { verifyDkimHere, type DnsResolver } from './dkim.js';
import type { FromWorker, ToWorker } from './offload.js';
import { parseReplyHere } from './reply-format.js';

const port = parentPort!;
const lookups = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
let nextLookup = 1;

function send(m: FromWorker): void {
  port.postMessage(m);
}

port.on('message', (m: ToWorker) => {
  if (m.type === 'dns') {
    const l = lookups.get(m.lookup);
    lookups.delete(m.lookup);
    if (!l) return;
    if (m.error) l.reject(Object.assign(new Error(m.error.message), m.error.code ? { code: m.error.code } : {}));
    else l.resolve(m.answer);
    return;
  }
  const raw = Buffer.from(m.raw.buffer, m.raw.byteOffset, m.raw.byteLength);
  const run = async (): Promise<unknown> => {
    if (m.kind === 'reply') return parseReplyHere(raw, (m.options as { maxAttachmentBytes?: number }).maxAttachmentBytes);
    const resolver: DnsResolver = (name, rrtype) =>
      new Promise((resolve, reject) => {
        const lookup = nextLookup++;
        lookups.set(lookup, { resolve, reject });
        send({ type: 'dns', id: m.id, lookup, name, rrtype });
      });
    const o = m.options as { timeoutMs?: number; now?: number };
    return verifyDkimHere(raw, resolver, { ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}), ...(o.now !== undefined ? { now: new Date(o.now) } : {}) });
  };
  run().then(
    (result) => send({ type: 'done', id: m.id, result }),
    (err: unknown) => send({ type: 'failed', id: m.id, message: err instanceof Error ? err.message : String(err), ...(err instanceof Error ? { name: err.name } : {}) }),
  );
});
