import type { Artifact, ListTasksResponse, Message, Part, SendMessageResponse, Task, TaskStatus } from '@a2a-js/sdk';
import type { ArtifactView, MessageView, PartView, TaskState, TaskView } from '../core/task-view.js';
import { bridgePart } from '../core/parts.js';
import { timestamp } from '../core/time.js';
import type { Narrow, ProtoJson, RoleName, TaskStateName } from './proto-json.js';

/**
 * Rendering of tasks for the wire, A2A v1.0 ProtoJSON (camelCase, enums by name, ISO timestamps
 * with `Z`, parts without `kind`: the A2A v1.0 JSON-RPC binding). The v0.3 dialect is rendered by
 * wire-v03.ts.
 *
 * The shapes are the SDK's v1.0 types in ProtoJSON form (proto-json.ts), narrowed to the members
 * the bridge always sets: a member the SDK renames or retypes is a compile error here.
 */

export type JsonObject = Record<string, unknown>;

type V1PartMetadata = NonNullable<ProtoJson<Part>['metadata']>;
/** A text part: the bridge's words, the agent's fenced text, or the caller's own text (docs/agent-text.md). */
export type V1TextPart = Narrow<Extract<ProtoJson<Part>, { text: string }>, { text: string; mediaType: string; metadata?: V1PartMetadata }>;
/** An agent's file: the bytes as base64 in `raw`, the name in `filename` (A2A v1.0 Part). */
export type V1FilePart = Narrow<Extract<ProtoJson<Part>, { raw: string }>, { raw: string; mediaType: string; filename?: string; metadata: V1PartMetadata }>;
/** An agent's JSON value (A2A v1.0 Part `data`). */
export type V1DataPart = Narrow<Extract<ProtoJson<Part>, { data: unknown }>, { data: unknown; mediaType: string; metadata: V1PartMetadata }>;
export type V1Part = V1TextPart | V1FilePart | V1DataPart;
export type V1Message = Narrow<ProtoJson<Message>, { messageId: string; contextId: string; taskId?: string; role: RoleName; parts: V1Part[] }>;
export type V1Artifact = Narrow<ProtoJson<Artifact>, { artifactId: string; name: string; description: string; parts: V1Part[] }>;
export type V1TaskStatus = Narrow<ProtoJson<TaskStatus>, { state: TaskStateName; timestamp: string; message?: V1Message }>;
/** The bridge's members of `Task.metadata` (a free-form map in the protocol). */
export type V1TaskMetadata = { agent: string; turn: number; createdAt: string; deadline?: string };
/** `artifacts` is absent from ListTasks entries unless `includeArtifacts` is set. */
export type V1Task = Narrow<
  ProtoJson<Task>,
  { id: string; contextId: string; status: V1TaskStatus; artifacts?: V1Artifact[]; history: V1Message[]; metadata: V1TaskMetadata }
>;
/** The `SendMessage` result (`SendMessageResponse`, a `oneof`): the Task, or a Message when no task is open. */
export type V1SendMessageResult =
  | Narrow<Extract<ProtoJson<SendMessageResponse>, { task: unknown }>, { task: V1Task }>
  | Narrow<Extract<ProtoJson<SendMessageResponse>, { message: unknown }>, { message: V1Message }>;
export type V1ListTasksResult = Narrow<ProtoJson<ListTasksResponse>, { tasks: V1Task[]; nextPageToken: string; pageSize: number; totalSize: number }>;

export function v1State(s: TaskState): TaskStateName {
  return `TASK_STATE_${s}`;
}

/**
 * One part in v1.0 shape: exactly one of `text`, `raw` or `data`, its `mediaType`, and the view's
 * metadata (whose agent or bridge it is: docs/agent-text.md, "Metadata").
 */
export function v1Part(p: PartView): V1Part {
  switch (p.kind) {
    case 'text':
      return { text: p.text, mediaType: 'text/plain', ...(p.meta ? { metadata: { ...p.meta } } : {}) };
    case 'file':
      return { raw: p.bytes.toString('base64'), mediaType: p.mediaType, ...(p.filename !== null ? { filename: p.filename } : {}), metadata: { ...p.meta } };
    case 'data':
      return { data: p.data, mediaType: p.mediaType, metadata: { ...p.meta } };
  }
}

export function v1Message(m: MessageView): V1Message {
  return {
    messageId: m.messageId,
    contextId: m.contextId,
    taskId: m.taskId,
    role: m.role === 'user' ? 'ROLE_USER' : 'ROLE_AGENT',
    parts: m.parts.map(v1Part),
  };
}

function v1Artifact(a: ArtifactView): V1Artifact {
  return { artifactId: a.artifactId, name: a.name, description: a.description, parts: a.parts.map(v1Part) };
}

/**
 * A v1.0 Task. `includeArtifacts: false` omits `artifacts` (ListTasks); `history` is always the
 * view's (already bounded) history.
 */
export function v1Task(v: TaskView, o: { includeArtifacts?: boolean } = {}): V1Task {
  const status: V1TaskStatus = { state: v1State(v.state), timestamp: timestamp(v.statusAt) };
  if (v.status.length > 0) {
    status.message = {
      messageId: `status-${v.id}-${v.statusAt}`,
      contextId: v.contextId,
      taskId: v.id,
      role: 'ROLE_AGENT',
      parts: v.status.map(v1Part),
    };
  }
  return {
    id: v.id,
    contextId: v.contextId,
    status,
    ...(o.includeArtifacts !== false ? { artifacts: v.artifacts.map(v1Artifact) } : {}),
    history: v.history.map(v1Message),
    metadata: { agent: v.agent, turn: v.turn, createdAt: timestamp(v.createdAt), ...(v.deadlineAt !== null ? { deadline: timestamp(v.deadlineAt) } : {}) },
  };
}

/** A v1.0 agent Message of the bridge's own words (the answer to a poll word on a context with no task). */
export function v1AgentText(contextId: string, text: string, messageId: string): V1Message {
  return { messageId, contextId, role: 'ROLE_AGENT', parts: [v1Part(bridgePart(text))] };
}
