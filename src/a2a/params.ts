import { createHash } from 'node:crypto';
import { DEADLINE_RANGE_S } from '../config/agents.js';
import type { SendInput } from '../core/submit.js';
import { TASK_STATES, type TaskState } from '../core/task-view.js';
import { A2AError } from './errors.js';
import { dataText } from './data-text.js';
import { pushConfigOf } from './push-params.js';

/**
 * Validation of method params. Every failure is an `A2AError` with a message that names the field,
 * so the calling model can correct itself. ProtoJSON accepts both lowerCamelCase and the original
 * snake_case field names (the conformance kit sends `history_length`, `context_id`; the ProtoJSON
 * mapping of field names), so every field is looked up under both.
 */

type Obj = Record<string, unknown>;

const MAX_ID_LENGTH = 256;
/** Serialised size a `data` part may have (its text goes into the webhook), and the message's parts together (twice that). */
const MAX_DATA_TEXT_BYTES = 1024 * 1024;
const MAX_TEXT_BYTES = MAX_DATA_TEXT_BYTES * 2;
/**
 * Parts a caller's message may have. A2A sets no limit; the 1 MB body alone admits 80,000 parts
 * (`{"data":{}}` is 12 bytes), and each costs a validation, a text, and then a part in every view of
 * the task for as long as it is kept: one such message held the event loop 2.5 s on receipt, and
 * each GetTask of its task 300 ms (attack review 3, 2026-12-02). 1,000 is the limit the bridge
 * already sets on the agent's side (a reply of more than 1,000 MIME parts is not read: README,
 * "Limits"), far above what a caller writes (one text part, a few data parts), and keeps the
 * check of a whole message near a millisecond (1,000 parts of `{"data":{}}` or `{"text":"a"}`: a
 * median 1.2–1.4 ms on a loaded 2-core machine, against 0.8–1.6 s for 80,000 before the cap).
 * Checked before any part is looked at.
 */
export const MAX_MESSAGE_PARTS = 1000;
/** The members that say a part's kind (v1.0); exactly one of them is present. */
const PART_KINDS = ['text', 'raw', 'url', 'data', 'file'] as const;
/** An RFC 3339 `date-time` (§5.6): full date, `T`, full time with optional fraction, and `Z` or a numeric offset. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;
/** Deadlines a caller may ask for, in seconds (metadata `deadline_s`): the config's agents.deadline_s range (README, "How callers see a long job"). */
export { DEADLINE_RANGE_S };

/** snake_case names of the camelCase field names asked for (a fixed set: the names in this file). */
const SNAKE = new Map<string, string>();

function snake(name: string): string {
  let s = SNAKE.get(name);
  if (s === undefined) SNAKE.set(name, (s = name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)));
  return s;
}

/** The value of `name` in camelCase or snake_case. */
export function field(o: Obj, name: string): unknown {
  return o[name] !== undefined ? o[name] : o[snake(name)];
}

export function asObject(v: unknown, what: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new A2AError('invalidParams', `${what} must be an object`);
  return v as Obj;
}

function optionalId(o: Obj, name: string, what: string): string | undefined {
  const v = field(o, name);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.length === 0 || v.length > MAX_ID_LENGTH || !v.isWellFormed()) {
    throw new A2AError('invalidParams', `${what}.${name} must be a non-empty, well-formed string of at most ${MAX_ID_LENGTH} characters`);
  }
  return v;
}

function requiredId(o: Obj, name: string, what: string): string {
  const v = optionalId(o, name, what);
  if (v === undefined) throw new A2AError('invalidParams', `${what}.${name} is required`);
  return v;
}

function optionalInt(o: Obj, name: string, what: string, min: number, max: number): number | undefined {
  const v = field(o, name);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new A2AError('invalidParams', `${what}.${name} must be an integer from ${min} to ${max}`);
  }
  return v;
}

function optionalBool(o: Obj, name: string, what: string): boolean | undefined {
  const v = field(o, name);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw new A2AError('invalidParams', `${what}.${name} must be true or false`);
  return v;
}

/**
 * The validated content of a SendMessage (v1.0) / message/send (v0.3): the caller's message as the
 * core takes it (`message`, all but who asked), and how the answer is shaped.
 */
export interface SendParams {
  message: Omit<SendInput, 'caller'>;
  historyLength?: number;
  /** v1.0 `configuration.returnImmediately`, or v0.3 `configuration.blocking: false`. */
  returnImmediately: boolean;
}

/** The error for parts whose text passes {@link MAX_TEXT_BYTES}, from part `i` on. */
function overTotal(i: number): A2AError {
  return new A2AError('invalidParams', `the message's parts come to more than ${MAX_TEXT_BYTES} bytes of text (message.parts[${i}] passes it)`);
}

/**
 * The text of part `i`.
 * @param room bytes of the message's total left for it: a data part past them is refused before its text is built
 */
function partText(p: Obj, i: number, room: number): string {
  let present: string | undefined;
  let count = 0;
  for (const k of PART_KINDS) {
    if (p[k] !== undefined) {
      present = k;
      count++;
    }
  }
  const kind = count === 1 ? present : typeof p.kind === 'string' ? p.kind : undefined;
  const givenMediaType = typeof p.mediaType === 'string' ? p.mediaType : undefined;
  const mediaType = givenMediaType?.toLowerCase();
  if (kind === 'text' && typeof p.text === 'string') {
    // The agent receives text: a text part that says it is something else cannot be carried.
    if (mediaType !== undefined && mediaType !== '' && !mediaType.startsWith('text/')) {
      throw new A2AError('contentTypeNotSupported', `message.parts[${i}]: a text part with mediaType ${givenMediaType} cannot be carried; send text/plain`);
    }
    // A UTF-16 surrogate without its pair cannot round-trip through UTF-8: each becomes U+FFFD
    // (`toWellFormed`, ES2024; one-byte text, the common case, is known well formed at once).
    return p.text.isWellFormed() ? p.text : p.text.toWellFormed();
  }
  if (kind === 'data' && p.data !== undefined) {
    if (mediaType !== undefined && mediaType !== '' && !/^application\/([\w.+-]+\+)?json$/.test(mediaType)) {
      throw new A2AError('contentTypeNotSupported', `message.parts[${i}]: a data part with mediaType ${givenMediaType} cannot be carried; send application/json`);
    }
    return dataText(p.data, i, MAX_DATA_TEXT_BYTES, room, () => overTotal(i));
  }
  if (kind === 'raw' || kind === 'url' || kind === 'file') {
    throw new A2AError('contentTypeNotSupported', `message.parts[${i}]: file parts cannot be carried to the agent; send text or data parts`);
  }
  throw new A2AError('invalidParams', `message.parts[${i}] must hold exactly one of text, raw, url or data`);
}

function deadlineOf(meta: unknown): number | undefined {
  if (meta === undefined || meta === null) return undefined;
  const m = asObject(meta, 'metadata');
  const v = m.deadline_s ?? m.deadlineS;
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < DEADLINE_RANGE_S[0] || v > DEADLINE_RANGE_S[1]) {
    throw new A2AError('invalidParams', `metadata.deadline_s must be an integer number of seconds from ${DEADLINE_RANGE_S[0]} to ${DEADLINE_RANGE_S[1]}`);
  }
  return v * 1000;
}

/**
 * The error for a `message.role` that is not the caller's: what was expected, what came (a short
 * name is quoted, anything else only described), and the fix when what came is the other
 * dialect's spelling — `ROLE_USER` is v1.0's (SendMessage…), `user` v0.3's (message/send…) — or
 * `UNRECOGNIZED`, what the `@a2a-js/sdk` client writes for a role given as a string instead of
 * its `Role` enum (its parts then go out empty too: README, "Calling it from code").
 */
function roleRefusal(got: unknown, roles: readonly string[]): string {
  let shown: string;
  if (got === undefined) shown = 'none';
  else if (typeof got === 'string') shown = /^[A-Za-z_]{1,32}$/.test(got) ? JSON.stringify(got) : `a string of ${got.length} characters`;
  else shown = got === null ? 'null' : `a ${typeof got}`;
  let hint = '';
  if (got === 'user' && !roles.includes('user')) hint = '; "user" is the v0.3 spelling, taken by message/send and message/stream';
  else if (got === 'ROLE_USER' && !roles.includes('ROLE_USER')) hint = '; "ROLE_USER" is the v1.0 spelling, taken by SendMessage and SendStreamingMessage';
  else if (got === 'UNRECOGNIZED') {
    hint =
      "; the @a2a-js/sdk client writes that for a message not in its in-memory form: role: Role.ROLE_USER (import { Role } from '@a2a-js/sdk') " +
      "and parts: [{ content: { $case: 'text', value: '…' } }] (README, \"Calling it from code\")";
  }
  return `message.role must be ${roles.join(' or ')} (got ${shown})${hint}`;
}

/**
 * SendMessage params (A2A v1.0 §3.1.1; v0.3 `message/send` has the same shape with `kind` tags).
 * @param roles accepted `message.role` values (`ROLE_USER` in v1.0, `user` in v0.3)
 * @throws A2AError invalidParams (among others: more than {@link MAX_MESSAGE_PARTS} parts, refused
 *   before any part is read), contentTypeNotSupported
 */
export function parseSendParams(params: unknown, roles: readonly string[]): SendParams {
  const p = asObject(params, 'params');
  const message = asObject(field(p, 'message'), 'params.message');
  const messageId = requiredId(message, 'messageId', 'message');
  const contextId = optionalId(message, 'contextId', 'message');
  const taskId = optionalId(message, 'taskId', 'message');
  if (!roles.includes(message.role as string)) throw new A2AError('invalidParams', roleRefusal(message.role, roles));
  const parts = message.parts;
  if (!Array.isArray(parts) || parts.length === 0) throw new A2AError('invalidParams', 'message.parts must be a non-empty array');
  if (parts.length > MAX_MESSAGE_PARTS) {
    throw new A2AError(
      'invalidParams',
      `message.parts has ${parts.length} parts; a message may have at most ${MAX_MESSAGE_PARTS}: join the text into fewer parts, or send the items as one data part`,
    );
  }
  // The running total is checked part by part, so a refused message costs no more text than the cap (src/a2a/data-text.ts).
  const texts: string[] = [];
  let total = 0;
  for (let i = 0; i < parts.length; i++) {
    const sep = i > 0 ? 1 : 0;
    const t = partText(asObject(parts[i], `message.parts[${i}]`), i, MAX_TEXT_BYTES - total - sep);
    total += sep + Buffer.byteLength(t);
    if (total > MAX_TEXT_BYTES) throw overTotal(i);
    texts.push(t);
  }
  const config = field(p, 'configuration') === undefined ? {} : asObject(field(p, 'configuration'), 'params.configuration');
  const pushV1 = field(config, 'taskPushNotificationConfig');
  const pushV03 = field(config, 'pushNotificationConfig');
  const push =
    pushV1 !== undefined && pushV1 !== null
      ? pushConfigOf(asObject(pushV1, 'configuration.taskPushNotificationConfig'), 'configuration.taskPushNotificationConfig', '1.0')
      : pushV03 !== undefined && pushV03 !== null
        ? pushConfigOf(asObject(pushV03, 'configuration.pushNotificationConfig'), 'configuration.pushNotificationConfig', '0.3')
        : undefined;
  const historyLength = optionalInt(config, 'historyLength', 'configuration', 0, 1000);
  const returnImmediately = optionalBool(config, 'returnImmediately', 'configuration');
  const blocking = optionalBool(config, 'blocking', 'configuration');
  const deadlineMs = deadlineOf(field(message, 'metadata')) ?? deadlineOf(field(p, 'metadata'));
  const text = texts.join('\n');
  const contentSha256 = createHash('sha256')
    .update(JSON.stringify([contextId ?? null, taskId ?? null, texts]))
    .digest('hex');
  return {
    message: { messageId, contextId, taskId, text, contentSha256, deadlineMs, ...(push ? { push } : {}) },
    historyLength,
    returnImmediately: returnImmediately === true || blocking === false,
  };
}

export function parseTaskIdParams(params: unknown): { id: string; historyLength?: number } {
  const p = asObject(params, 'params');
  return { id: requiredId(p, 'id', 'params'), historyLength: optionalInt(p, 'historyLength', 'params', 0, 1000) };
}

/** A v1.0 `TaskState` name (`TASK_STATE_WORKING`), or undefined for TASK_STATE_UNSPECIFIED / absent. */
export function parseV1State(v: unknown, what: string): TaskState | undefined {
  if (v === undefined || v === null || v === 'TASK_STATE_UNSPECIFIED') return undefined;
  const s = typeof v === 'string' ? v.replace(/^TASK_STATE_/, '') : '';
  if (!(TASK_STATES as readonly string[]).includes(s) || typeof v !== 'string' || !v.startsWith('TASK_STATE_')) {
    throw new A2AError('invalidParams', `${what} must be a TaskState such as TASK_STATE_WORKING`);
  }
  return s as TaskState;
}

export interface ListParams {
  contextId?: string;
  state?: TaskState;
  pageSize: number;
  pageToken?: string;
  historyLength?: number;
  updatedAfter?: number;
  includeArtifacts: boolean;
}

/** ListTasks params (A2A v1.0 §3.1.4). */
export function parseListParams(params: unknown): ListParams {
  const p = params === undefined || params === null ? {} : asObject(params, 'params');
  const after = field(p, 'statusTimestampAfter');
  let updatedAfter: number | undefined;
  if (after !== undefined && after !== null) {
    updatedAfter = typeof after === 'string' && RFC3339.test(after) ? Date.parse(after) : Number.NaN;
    if (Number.isNaN(updatedAfter)) {
      throw new A2AError('invalidParams', 'params.statusTimestampAfter must be an RFC 3339 timestamp such as 2026-01-31T12:00:00Z (A2A v1.0 §5.6.1)');
    }
  }
  const pageToken = field(p, 'pageToken');
  if (pageToken !== undefined && pageToken !== null && typeof pageToken !== 'string') {
    throw new A2AError('invalidParams', 'params.pageToken must be a string');
  }
  return {
    contextId: optionalId(p, 'contextId', 'params'),
    state: parseV1State(field(p, 'status'), 'params.status'),
    pageSize: optionalInt(p, 'pageSize', 'params', 1, 100) ?? 50,
    pageToken: pageToken ? pageToken : undefined,
    historyLength: optionalInt(p, 'historyLength', 'params', 0, 1000),
    updatedAfter,
    includeArtifacts: optionalBool(p, 'includeArtifacts', 'params') ?? false,
  };
}
