import type { LegacyRestTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { bridgePart } from '../core/parts.js';
import type { MessageView, PartView, TaskState, TaskView } from '../core/task-view.js';
import { timestamp } from '../core/time.js';
import type { Narrow } from './proto-json.js';

/**
 * Rendering for the A2A v0.3 dialect (`message/send`, `tasks/get`, `tasks/cancel`): bare
 * results, `kind` tags on tasks, messages and parts, lowercase hyphenated states (the A2A v1.0 JSON-RPC binding).
 *
 * The shapes are the SDK's v0.3 JSON types. `@a2a-js/sdk/compat/v0_3` does not export them by name;
 * they are taken from the signatures of its public v0.3 REST handler (`getTask` answers a v0.3
 * Task, `sendMessage` a Task or Message), so a drift of the SDK's v0.3 shape is a compile error here.
 */

type SdkV03Task = Awaited<ReturnType<LegacyRestTransportHandler['getTask']>>;
type SdkV03Message = Extract<Awaited<ReturnType<LegacyRestTransportHandler['sendMessage']>>, { kind: 'message' }>;
type SdkV03Artifact = NonNullable<SdkV03Task['artifacts']>[number];

export type V03TaskStateName = SdkV03Task['status']['state'];
type SdkV03Part = SdkV03Message['parts'][number];
export type V03TextPart = Extract<SdkV03Part, { kind: 'text' }>;
/** An agent's file with its bytes inline (`file.bytes` base64, `mimeType`, `name`). */
export type V03FilePart = Narrow<Extract<SdkV03Part, { kind: 'file' }>, { file: { bytes: string; mimeType: string; name?: string }; metadata: Record<string, unknown> }>;
/** An agent's JSON value; v0.3 `data` is an object, so another value is wrapped as `{ "value": … }`. */
export type V03DataPart = Narrow<Extract<SdkV03Part, { kind: 'data' }>, { metadata: Record<string, unknown> }>;
export type V03Part = V03TextPart | V03FilePart | V03DataPart;
export type V03Message = Narrow<SdkV03Message, { contextId: string; parts: V03Part[] }>;
export type V03Artifact = Narrow<SdkV03Artifact, { name: string; parts: V03Part[] }>;
export type V03TaskStatus = Narrow<SdkV03Task['status'], { timestamp: string; message?: V03Message }>;
/** The bridge's members of `Task.metadata` (a free-form map in the protocol). */
export type V03TaskMetadata = { agent: string; turn: number };
export type V03Task = Narrow<SdkV03Task, { status: V03TaskStatus; artifacts: V03Artifact[]; history: V03Message[]; metadata: V03TaskMetadata }>;

const V03_STATES: Record<TaskState, V03TaskStateName> = {
  SUBMITTED: 'submitted',
  WORKING: 'working',
  INPUT_REQUIRED: 'input-required',
  COMPLETED: 'completed',
  FAILED: 'failed',
  CANCELED: 'canceled',
  REJECTED: 'rejected',
};

export function v03State(s: TaskState): V03TaskStateName {
  return V03_STATES[s];
}

/** One part in v0.3 shape (`kind` tags), with the view's metadata (docs/agent-text.md, "Metadata"). */
export function v03Part(p: PartView): V03Part {
  switch (p.kind) {
    case 'text':
      return { kind: 'text', text: p.text, ...(p.meta ? { metadata: { ...p.meta } } : {}) };
    case 'file':
      return { kind: 'file', file: { bytes: p.bytes.toString('base64'), mimeType: p.mediaType, ...(p.filename !== null ? { name: p.filename } : {}) }, metadata: { ...p.meta } };
    case 'data': {
      const isObject = typeof p.data === 'object' && p.data !== null && !Array.isArray(p.data);
      return {
        kind: 'data',
        data: isObject ? (p.data as Record<string, unknown>) : { value: p.data },
        metadata: { ...p.meta, mediaType: p.mediaType, ...(isObject ? {} : { wrapped: 'value' }) },
      };
    }
  }
}

function v03Message(m: MessageView): V03Message {
  return { kind: 'message', messageId: m.messageId, contextId: m.contextId, taskId: m.taskId, role: m.role, parts: m.parts.map(v03Part) };
}

/** A v0.3 Task (`kind: "task"`). */
export function v03Task(v: TaskView): V03Task {
  const status: V03TaskStatus = { state: v03State(v.state), timestamp: timestamp(v.statusAt) };
  if (v.status.length > 0) {
    status.message = {
      kind: 'message',
      messageId: `status-${v.id}-${v.statusAt}`,
      contextId: v.contextId,
      taskId: v.id,
      role: 'agent',
      parts: v.status.map(v03Part),
    };
  }
  return {
    kind: 'task',
    id: v.id,
    contextId: v.contextId,
    status,
    artifacts: v.artifacts.map((a) => ({ artifactId: a.artifactId, name: a.name, description: a.description, parts: a.parts.map(v03Part) })),
    history: v.history.map(v03Message),
    metadata: { agent: v.agent, turn: v.turn },
  };
}

/** A v0.3 agent Message (`kind: "message"`) of the bridge's own words. */
export function v03AgentText(contextId: string, text: string, messageId: string): V03Message {
  return { kind: 'message', messageId, contextId, role: 'agent', parts: [v03Part(bridgePart(text))] };
}
