import type { StreamResponse, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import type { TaskUpdate } from '../core/task-follow.js';
import type { Narrow, ProtoJson } from './proto-json.js';
import { v1Artifact, v1Status, v1Task, type V1Artifact, type V1Task, type V1TaskStatus } from './wire.js';
import { v03Artifact, v03Status, v03Task, type V03Artifact, type V03Task, type V03TaskStatus } from './wire-v03.js';

/**
 * The events of a stream on the wire (A2A v1.0 §3.2.3 StreamResponse, §4.2 the update events;
 * v0.3 §7.2.1–7.2.3, with `kind` tags and `final`).
 */

export type V1StatusUpdate = Narrow<ProtoJson<TaskStatusUpdateEvent>, { taskId: string; contextId: string; status: V1TaskStatus }>;
export type V1ArtifactUpdate = Narrow<ProtoJson<TaskArtifactUpdateEvent>, { taskId: string; contextId: string; artifact: V1Artifact; lastChunk: boolean }>;
/** A v1.0 StreamResponse (a `oneof`: exactly one member). */
export type V1StreamResponse =
  | Narrow<Extract<ProtoJson<StreamResponse>, { task: unknown }>, { task: V1Task }>
  | Narrow<Extract<ProtoJson<StreamResponse>, { statusUpdate: unknown }>, { statusUpdate: V1StatusUpdate }>
  | Narrow<Extract<ProtoJson<StreamResponse>, { artifactUpdate: unknown }>, { artifactUpdate: V1ArtifactUpdate }>;

export interface V03StatusUpdate {
  kind: 'status-update';
  taskId: string;
  contextId: string;
  status: V03TaskStatus;
  /** True on the update after which the server closes the stream (v0.3 §7.2.2). */
  final: boolean;
}
export interface V03ArtifactUpdate {
  kind: 'artifact-update';
  taskId: string;
  contextId: string;
  artifact: V03Artifact;
  lastChunk: boolean;
}
export type V03StreamEvent = V03Task | V03StatusUpdate | V03ArtifactUpdate;

/** One update as a v1.0 StreamResponse. Each artifact is whole (`lastChunk`, never `append`). */
export function v1StreamResponse(u: TaskUpdate): V1StreamResponse {
  const ids = { taskId: u.task.id, contextId: u.task.contextId };
  switch (u.kind) {
    case 'task':
      return { task: v1Task(u.task) };
    case 'artifact':
      return { artifactUpdate: { ...ids, artifact: v1Artifact(u.artifact), lastChunk: true } };
    case 'status':
      return { statusUpdate: { ...ids, status: v1Status(u.task) } };
  }
}

/** One update as a v0.3 event: the Task, an `artifact-update`, or a `status-update` with `final`. */
export function v03StreamEvent(u: TaskUpdate): V03StreamEvent {
  const ids = { taskId: u.task.id, contextId: u.task.contextId };
  switch (u.kind) {
    case 'task':
      return v03Task(u.task);
    case 'artifact':
      return { kind: 'artifact-update', ...ids, artifact: v03Artifact(u.artifact), lastChunk: true };
    case 'status':
      return { kind: 'status-update', ...ids, status: v03Status(u.task), final: u.final };
  }
}
