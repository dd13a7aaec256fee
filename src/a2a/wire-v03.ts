import type { MessageView, TaskState, TaskView } from '../core/task-view.js';
import { timestamp } from '../core/time.js';
import type { JsonObject } from './wire.js';

/**
 * Rendering for the A2A v0.3 dialect (`message/send`, `tasks/get`, `tasks/cancel`): bare results,
 * `kind` tags on tasks, messages and parts, lowercase hyphenated states (A2A v0.3).
 */

const V03_STATES: Record<TaskState, string> = {
  SUBMITTED: 'submitted',
  WORKING: 'working',
  INPUT_REQUIRED: 'input-required',
  COMPLETED: 'completed',
  FAILED: 'failed',
  CANCELED: 'canceled',
  REJECTED: 'rejected',
};

export function v03State(s: TaskState): string {
  return V03_STATES[s];
}

function textPart(text: string): JsonObject {
  return { kind: 'text', text };
}

function v03Message(m: MessageView): JsonObject {
  return { kind: 'message', messageId: m.messageId, contextId: m.contextId, taskId: m.taskId, role: m.role, parts: [textPart(m.text)] };
}

/** A v0.3 Task (`kind: "task"`). */
export function v03Task(v: TaskView): JsonObject {
  const status: JsonObject = { state: v03State(v.state), timestamp: timestamp(v.statusAt) };
  if (v.statusText !== null) {
    status.message = {
      kind: 'message',
      messageId: `status-${v.id}-${v.statusAt}`,
      contextId: v.contextId,
      taskId: v.id,
      role: 'agent',
      parts: [textPart(v.statusText)],
    };
  }
  return {
    kind: 'task',
    id: v.id,
    contextId: v.contextId,
    status,
    artifacts: v.artifacts.map((a) => ({ artifactId: a.artifactId, name: a.name, parts: [textPart(a.text)] })),
    history: v.history.map(v03Message),
    metadata: { agent: v.agent, turn: v.turn },
  };
}

/** A v0.3 agent Message (`kind: "message"`). */
export function v03AgentText(contextId: string, text: string, messageId: string): JsonObject {
  return { kind: 'message', messageId, contextId, role: 'agent', parts: [textPart(text)] };
}
