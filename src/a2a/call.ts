import type { AgentConfig } from '../config/config.js';
import type { Bridge } from '../core/bridge.js';

/**
 * Who is calling and in which dialect; the dialect follows the method name (docs/architecture.md,
 * "Context rules").
 */
export interface CallContext {
  agent: AgentConfig;
  /** A short description of the caller for the audit entry (e.g. its User-Agent). */
  caller: string;
  /** Aborted when the client goes away: ends a stream. */
  signal?: AbortSignal;
}

/** What a streaming method returns: its events, each the `result` of one JSON-RPC response (or, over HTTP+JSON, one SSE event). */
export class StreamResult {
  constructor(readonly events: AsyncIterable<unknown>) {}
}

/**
 * A result already serialised as JSON text (GetTask's answer, built once per view: src/a2a/methods.ts),
 * sent as it is instead of through `JSON.stringify` on every call.
 */
export class JsonText {
  #bytes: Buffer | undefined;
  constructor(readonly text: string) {}
  /** {@link text} as UTF-8, made on first use and kept (a view's answer is sent many times). */
  get bytes(): Buffer {
    return (this.#bytes ??= Buffer.from(this.text, 'utf8'));
  }
}

/**
 * One A2A method: validated params in, a result (or a {@link StreamResult}) out, or a promise of
 * one when it waits for something; errors are thrown (or the promise rejected).
 */
export type Handler = (bridge: Bridge, params: unknown, c: CallContext) => unknown;
