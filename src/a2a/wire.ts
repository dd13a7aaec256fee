import type { ArtifactView, MessageView, TaskState, TaskView } from '../core/task-view.js';
import { timestamp } from '../core/time.js';

/**
 * Rendering of tasks for the wire, A2A v1.0 ProtoJSON (camelCase, enums by name, ISO timestamps
 * with `Z`, parts without `kind`: the A2A v1.0 JSON-RPC binding). The v0.3 dialect is rendered by
 * wire-v03.ts.
 */

export type JsonObject = Record<string, unknown>;

export function v1State(s: TaskState): string {
  return `TASK_STATE_${s}`;
}

function textPart(text: string): JsonObject {
  return { text, mediaType: 'text/plain' };
}

export function v1Message(m: MessageView): JsonObject {
  return {
    messageId: m.messageId,
    contextId: m.contextId,
    taskId: m.taskId,
    role: m.role === 'user' ? 'ROLE_USER' : 'ROLE_AGENT',
    parts: [textPart(m.text)],
  };
}

function v1Artifact(a: ArtifactView): JsonObject {
  return {
    artifactId: a.artifactId,
    name: a.name,
    description: a.late ? 'An authenticated reply that arrived after the task failed; not applied' : 'The agent reply',
    parts: [textPart(a.text)],
  };
}

/**
 * A v1.0 Task. `includeArtifacts: false` omits `artifacts` (ListTasks); `history` is always the
 * view's (already bounded) history.
 */
export function v1Task(v: TaskView, o: { includeArtifacts?: boolean } = {}): JsonObject {
  const status: JsonObject = { state: v1State(v.state), timestamp: timestamp(v.statusAt) };
  if (v.statusText !== null) {
    status.message = {
      messageId: `status-${v.id}-${v.statusAt}`,
      contextId: v.contextId,
      taskId: v.id,
      role: 'ROLE_AGENT',
      parts: [textPart(v.statusText)],
    };
  }
  const out: JsonObject = { id: v.id, contextId: v.contextId, status };
  if (o.includeArtifacts !== false) out.artifacts = v.artifacts.map(v1Artifact);
  out.history = v.history.map(v1Message);
  out.metadata = { agent: v.agent, turn: v.turn, createdAt: timestamp(v.createdAt), ...(v.deadlineAt !== null ? { deadline: timestamp(v.deadlineAt) } : {}) };
  return out;
}

/** A v1.0 agent Message (the answer to a poll word on a context with no task). */
export function v1AgentText(contextId: string, text: string, messageId: string): JsonObject {
  return { messageId, contextId, role: 'ROLE_AGENT', parts: [textPart(text)] };
}
