import type { AgentConfig } from '../config/config.js';
import type { SendOutcome } from './submit.js';
import { contextIdWords } from './status-text.js';
import { prependStatusNote, type TaskView } from './task-view.js';

/**
 * What a send tells the caller when its text was not forwarded to the agent (the context rules of
 * docs/architecture.md, "The data path"): the bridge's own sentences, put before the status
 * message in a bridge part (docs/agent-text.md), never inside agent text.
 */

/** The answer to a poll word on a context with no task. */
export function noTaskText(contextId: string): string {
  return `There is no task on ${contextIdWords(contextId, 'the context_id you sent')} yet. Send the job's text to start one.`;
}

/** Adds to `view` (in place) the note a send's outcome calls for; returns `view`. */
export function withSendNotes(agent: AgentConfig, outcome: Exclude<SendOutcome, { kind: 'no-task' }>, view: TaskView): TaskView {
  if (outcome.kind === 'poll' && outcome.ignoredText === 'open' && view.status.length > 0) {
    prependStatusNote(
      view,
      `Your message was not sent to ${agent.name}: the task is still with it, and a task takes new input only when it asks for it (input-required). This call was a status check.`,
    );
  }
  if (outcome.kind === 'poll' && outcome.ignoredText === 'unseen-outcome') {
    prependStatusNote(view, `Your message was not sent to ${agent.name}: this task had finished, and this is its result. Send your message again to start a new task.`);
  }
  return view;
}
