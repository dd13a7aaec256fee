/**
 * The load generator, run as a child process of its own (bench/lib/child.ts) so it never shares an
 * event loop with the server it measures. It drives autocannon programmatically and records every
 * response time itself (autocannon's histogram keeps whole milliseconds, too coarse for a p50 of
 * a fraction of a millisecond).
 */
import autocannon from 'autocannon';
import { quantile } from './stats.js';
import { serveParent } from './child.js';

export interface LoadJob {
  url: string;
  connections: number;
  durationS: number;
  headers: Record<string, string>;
  /** One body for every request (with `[<id>]` replaced by a fresh id when `idReplacement`). */
  body?: string;
  idReplacement?: boolean;
  /** Or: bodies used in turn, one per request. */
  bodies?: string[];
}

export interface LoadResult {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  max: number;
  non2xx: number;
  errors: number;
  durationS: number;
}

function run(job: LoadJob): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const times: number[] = [];
    let next = 0;
    const bodies = job.bodies;
    const opts: autocannon.Options = {
      url: job.url,
      connections: job.connections,
      duration: job.durationS,
      method: 'POST',
      headers: job.headers,
      timeout: 30,
      ...(bodies
        ? { requests: [{ method: 'POST', setupRequest: (req: autocannon.Request) => ({ ...req, body: bodies[next++ % bodies.length]! }) }] }
        : { body: job.body ?? '', idReplacement: job.idReplacement ?? false }),
    };
    const started = process.hrtime.bigint();
    const instance = autocannon(opts, (err, result) => {
      if (err) return reject(err);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      resolve({
        requests: times.length,
        rps: times.length / Math.min(seconds, result.duration || seconds),
        p50: quantile(times, 0.5),
        p99: quantile(times, 0.99),
        max: quantile(times, 1),
        non2xx: result.non2xx,
        errors: result.errors,
        durationS: result.duration,
      });
    });
    instance.on('response', (_client: unknown, status: number, _bytes: number, responseTime: number) => {
      if (status >= 200 && status < 300) times.push(responseTime);
    });
  });
}

serveParent({}, async (m) => {
  if (m.type !== 'run') throw new Error(`unknown request ${String(m.type)}`);
  return { result: await run(m.job as LoadJob) };
});
