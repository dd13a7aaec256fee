/**
 * Asks a running bridge for `GET /health` on the loopback address the config names: the one
 * network call of `status` and `service status`, to our own server only.
 */
import type { Config } from '../config/config.js';
import { storeFingerprint } from '../core/store-fingerprint.js';

/**
 * The bridge answered (its /health body, and whether it serves this config's store), or it did
 * not (why, as an error code or a status).
 */
export type HealthProbe =
  | {
      up: true;
      url: string;
      health: Record<string, unknown>;
      /**
       * Whether the bridge answering serves the store of this config (`store.fingerprint` of its
       * /health against this config's store.path, src/core/store-fingerprint.ts): false for a bridge
       * started with another config on the same address; null when its /health names no store (a
       * version before the fingerprint) and so cannot tell.
       */
      sameStore: boolean | null;
      /** The two fingerprints compared: the one /health names (null: none) and this config's. */
      stores: { answering: string | null; ours: string };
    }
  | { up: false; url: string; why: string };

/**
 * GET `http://<server.listen>/health`, within `timeoutMs`.
 * @returns never throws: a refusal, a timeout or a non-JSON answer is `up: false` with the reason
 */
export async function probeHealth(config: Config, timeoutMs = 1500): Promise<HealthProbe> {
  const { host, port } = config.server;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}/health`;
  if (port === 0) return { up: false, url, why: 'server.listen has port 0 (a new port at each start): cannot tell' };
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) return { up: false, url, why: `HTTP ${res.status}` };
    const health = (await res.json()) as Record<string, unknown>;
    const named = (health.store as { fingerprint?: unknown } | undefined)?.fingerprint;
    const answering = typeof named === 'string' ? named : null;
    const ours = storeFingerprint(config.store.path);
    return { up: true, url, health, sameStore: answering === null ? null : answering === ours, stores: { answering, ours } };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    const why = e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (e.cause?.code ?? e.message);
    return { up: false, url, why };
  }
}
