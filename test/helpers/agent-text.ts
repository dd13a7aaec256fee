/**
 * Reading the bridge's output the way its callers do, written from their side and not from ours:
 *
 * - {@link fenceOf} takes a fenced agent part apart by the rule docs/agent-text.md states (a start
 *   line ending in `BEGIN-AGENT-TEXT <nonce>`, the last line `END-AGENT-TEXT <same nonce>`);
 * - {@link hermesPrints} renders a v1.0 SendMessage result exactly as Hermes Agent's `a2a_call`
 *   does (plugins/platforms/a2a/tools.py `_reply_text_from_result`, protocol.py `extract_text`):
 *   the first artifact whose parts give text, else `status.message`; every part of it joined with
 *   a line break (text as is, a `raw` file as `[file: <name>] <n> bytes base64-encoded (<type>)`,
 *   data as `[data (<type>)]` and its JSON); under the line `[<agent> · context <ctx> · <state>]`,
 *   and for `TASK_STATE_INPUT_REQUIRED` its note to answer on the same context.
 */
import { expect } from 'vitest';

/** A fenced agent text taken apart. */
export interface Fence {
  /** The start line without ` BEGIN-AGENT-TEXT <nonce>`: the agent's untrusted label. */
  label: string;
  nonce: string;
  /** The lines between the start and end lines. */
  body: string;
}

/** The fence of `text`, or throws when `text` is not exactly one fenced agent text. */
export function fenceOf(text: string): Fence {
  const lines = text.split('\n');
  const start = /^(.*) BEGIN-AGENT-TEXT ([0-9a-f]{16})$/.exec(lines[0] ?? '');
  if (!start || lines.length < 2) throw new Error(`not a fenced agent text: ${JSON.stringify(text.slice(0, 200))}`);
  const nonce = start[2]!;
  if (lines.at(-1) !== `END-AGENT-TEXT ${nonce}`) throw new Error(`the last line is not the end line of fence ${nonce}`);
  const body = lines.slice(1, -1);
  // Exactly one fence pair: no other line of the text is a start or end line of this fence.
  if (body.some((l) => l.includes(nonce))) throw new Error(`the fence's nonce ${nonce} occurs inside the fenced text`);
  return { label: start[1]!, nonce, body: body.join('\n') };
}

/** Asserts `text` is `body` fenced under `label`; returns the nonce. */
export function expectFenced(text: string | undefined, body: string, label = '[UNTRUSTED — grok reply, verify before acting]'): string {
  const f = fenceOf(text ?? '');
  expect({ label: f.label, body: f.body }).toEqual({ label, body });
  return f.nonce;
}

/** A part as the JSON carries it (v1.0 or v0.3), loosely typed: Hermes reads it loosely too. */
export interface LoosePart {
  text?: string;
  kind?: string;
  raw?: string;
  url?: string;
  filename?: string;
  mediaType?: string;
  data?: unknown;
  file?: { fileWithUri?: string; name?: string; mimeType?: string };
  metadata?: Record<string, unknown>;
}

interface LooseTask {
  contextId?: string;
  status?: { state?: string; message?: { parts?: LoosePart[] } };
  artifacts?: { parts?: LoosePart[] }[];
}

/** Python's `json.dumps(value, ensure_ascii=False)`: `, ` and `: ` between members. */
function pythonDumps(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(pythonDumps).join(', ')}]`;
  if (typeof v === 'object' && v !== null) return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${pythonDumps(x)}`).join(', ')}}`;
  return JSON.stringify(v);
}

/** Hermes' `extract_text`: the parts' texts joined with line breaks, trimmed. */
export function hermesExtractText(parts: readonly LoosePart[] | undefined): string {
  const chunks: string[] = [];
  for (const p of parts ?? []) {
    if (typeof p.text === 'string') chunks.push(p.text);
    else if (typeof p.url === 'string' && p.url) chunks.push(`${p.filename ? `[file: ${p.filename}]` : '[file]'} ${p.url}${p.mediaType ? ` (${p.mediaType})` : ''}`);
    else if (typeof p.file?.fileWithUri === 'string') chunks.push(`${p.file.name ? `[file: ${p.file.name}]` : '[file]'} ${p.file.fileWithUri}${p.file.mimeType ? ` (${p.file.mimeType})` : ''}`);
    else if (typeof p.raw === 'string') chunks.push(`${p.filename ? `[file: ${p.filename}]` : '[file]'} ${p.raw.length} bytes base64-encoded${p.mediaType ? ` (${p.mediaType})` : ''}`);
    else if (p.data !== undefined && p.data !== null) chunks.push(`[data (${p.mediaType ?? 'application/json'})]\n${pythonDumps(p.data)}`);
  }
  return chunks.join('\n').trim();
}

/** Hermes' `_reply_text_from_result` on a Task. */
export function hermesReplyText(task: LooseTask): string {
  for (const a of task.artifacts ?? []) {
    const t = hermesExtractText(a.parts);
    if (t) return t;
  }
  return task.status?.message ? hermesExtractText(task.status.message.parts) : '';
}

/** What Hermes' `a2a_call` returns to its model for a v1.0 Task from agent `agent`. */
export function hermesPrints(agent: string, task: LooseTask): string {
  const state = task.status?.state ?? '';
  const short = state.replace('TASK_STATE_', '').replaceAll('_', '-').toLowerCase();
  const header = `[${agent} · context ${task.contextId ?? ''}${state ? ` · ${short}` : ''}]`;
  let body = hermesReplyText(task) || '(no text reply)';
  if (state === 'TASK_STATE_INPUT_REQUIRED') body += `\n\n(The peer needs more input — answer by calling a2a_call again with context_id '${task.contextId ?? ''}'.)`;
  return `${header}\n${body}`;
}

/**
 * A text as `<label>\n<body>` when it is one fenced agent text (checked by {@link fenceOf}), else
 * as it is: the caller's own text, the bridge's words.
 */
export function unfence(text: string | undefined): string {
  if (text === undefined) return '';
  if (!/ BEGIN-AGENT-TEXT [0-9a-f]{16}\n/.test(text)) return text;
  const f = fenceOf(text);
  return `${f.label}\n${f.body}`;
}

/** Every string in a JSON value, member names included (where agent text could hide in a view). */
export function jsonStrings(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (typeof v === 'object' && v !== null) {
    for (const [k, x] of Object.entries(v)) {
      out.push(k);
      jsonStrings(x, out);
    }
  }
  return out;
}
