/**
 * What a caller of the bridge sees (Hermes Agent, plugins/platforms/a2a/tools.py): the text Hermes
 * shows the model, the status text, and GET /health.
 */
import type { HealthJson } from '../../../src/a2a/health.js';
import type { V1Task } from '../../../src/a2a/wire.js';
import { hermesReplyText } from '../../helpers/agent-text.js';
import { hex, type Harness } from '../../helpers/bridge-harness.js';

/** A fresh A2A context id. */
export function newContext(): string {
  return `ctx-${hex(8)}`;
}

/**
 * What Hermes shows the model: the first artifact with text, else `status.message`, each with its
 * parts joined (test/helpers/agent-text.ts, after Hermes Agent's plugins/platforms/a2a/tools.py).
 */
export function shown(task: V1Task | undefined): string {
  return task ? hermesReplyText(task) : '';
}

/** The bridge's own text in `status.message` (its first part; '' when absent). */
export function statusMessage(task: V1Task | undefined): string {
  return task?.status?.message?.parts?.[0]?.text ?? '';
}

/** GET /health of the harness's bridge. */
export async function healthOf(h: Harness): Promise<HealthJson> {
  const res = await fetch(`${h.app.server.baseUrl}/health`);
  if (res.status !== 200) throw new Error(`/health answered ${res.status}`);
  return (await res.json()) as HealthJson;
}
