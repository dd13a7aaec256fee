import type { TaskView } from '../core/task-view.js';
import { timestamp } from '../core/time.js';
import type { ArtifactRow } from '../store/artifacts.js';
import type { MessageRow } from '../store/messages.js';
import type { TaskState } from '../store/task-state.js';

/**
 * Rendering of tasks for the wire, A2A v1.0 ProtoJSON (camelCase, enums by name, ISO timestamps
 * with `Z`, parts without `kind`: FACTS.md "A2A"). The v0.3 dialect is rendered by wire-v03.ts.
 */

export type JsonObject = Record<string, unknown>;

export function v1State(s: TaskState): string {
  return `TASK_STATE_${s}`;
}

function textPart(text: string): JsonObject {
  return { text, mediaType: 'text/plain' };
}

export function v1Message(m: MessageRow): JsonObject {
  return {
    messageId: m.messageId,
    contextId: m.contextId,
    taskId: m.taskId,
    role: m.role === 'user' ? 'ROLE_USER' : 'ROLE_AGENT',
    parts: [textPart(m.text)],
  };
}

function v1Artifact(a: ArtifactRow): JsonObject {
  return {
    artifactId: a.artifactId,
    name: a.name,
    description: a.name === 'late-reply' ? 'An authenticated reply that arrived after the task failed; not applied' : 'The agent reply',
    parts: [textPart(a.text)],
  };
}

/**
 * A v1.0 Task. `includeArtifacts: false` omits `artifacts` (ListTasks); `history` is always the
 * view's (already bounded) history.
 */
export function v1Task(v: TaskView, o: { includeArtifacts?: boolean } = {}): JsonObject {
  const { task } = v;
  const status: JsonObject = { state: v1State(task.state), timestamp: timestamp(task.updatedAt) };
  if (v.statusText !== null) {
    status.message = {
      messageId: `status-${task.id}-${task.updatedAt}`,
      contextId: task.contextId,
      taskId: task.id,
      role: 'ROLE_AGENT',
      parts: [textPart(v.statusText)],
    };
  }
  const out: JsonObject = { id: task.id, contextId: task.contextId, status };
  if (o.includeArtifacts !== false) out.artifacts = v.artifacts.map(v1Artifact);
  out.history = v.history.map(v1Message);
  out.metadata = { agent: task.agent, turn: task.turn, createdAt: timestamp(task.createdAt), ...(task.deadlineAt !== null ? { deadline: timestamp(task.deadlineAt) } : {}) };
  return out;
}

/** A v1.0 agent Message (the answer to a poll word on a context with no task). */
export function v1AgentText(contextId: string, text: string, messageId: string): JsonObject {
  return { messageId, contextId, role: 'ROLE_AGENT', parts: [textPart(text)] };
}
