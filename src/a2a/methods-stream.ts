import { randomUUID } from 'node:crypto';
import { isTerminal, type TaskUpdate } from '../core/task-follow.js';
import { A2AError } from './errors.js';
import { StreamResult, type Handler } from './call.js';
import { parseSendParams, parseTaskIdParams } from './params.js';
import { v03StreamEvent, v1StreamResponse } from './stream-wire.js';
import { v1AgentText } from './wire.js';
import { v03AgentText } from './wire-v03.js';

/**
 * The streaming methods (docs/streaming.md): SendStreamingMessage and SubscribeToTask (A2A v1.0
 * §3.1.2, §3.1.6, §9.4.2, §9.4.6), `message/stream` and `tasks/resubscribe` (v0.3 §7.2, §7.7).
 */

async function* mapped<T>(updates: AsyncIterable<TaskUpdate>, render: (u: TaskUpdate) => T): AsyncIterable<T> {
  for await (const u of updates) yield render(u);
}

async function* one<T>(event: T): AsyncIterable<T> {
  yield await Promise.resolve(event);
}

export const V1_STREAM_METHODS: Readonly<Record<string, Handler>> = {
  SendStreamingMessage: (bridge, params, c) => {
    const p = parseSendParams(params, ['ROLE_USER']);
    const r = bridge.sendStream(c.agent, { ...p.message, caller: c.caller }, c.signal);
    // A poll word on a context with no task: a message-only stream (§3.1.2, pattern 1).
    if ('message' in r) return Promise.resolve(new StreamResult(one({ message: v1AgentText(r.message.contextId, r.message.text, randomUUID()) })));
    return Promise.resolve(new StreamResult(mapped(r.updates, v1StreamResponse)));
  },
  SubscribeToTask: (bridge, params, c) => {
    const { id } = parseTaskIdParams(params);
    const view = bridge.viewOf(c.agent, id);
    // §3.1.6: UnsupportedOperationError for a task in a terminal state.
    if (isTerminal(view.state)) {
      throw new A2AError('unsupportedOperation', `Task ${id} is ${view.state.toLowerCase()}; there is nothing to subscribe to. GetTask returns its result.`);
    }
    return Promise.resolve(new StreamResult(mapped(bridge.subscribe(c.agent, id, c.signal), v1StreamResponse)));
  },
};

export const V03_STREAM_METHODS: Readonly<Record<string, Handler>> = {
  'message/stream': (bridge, params, c) => {
    const p = parseSendParams(params, ['user']);
    const r = bridge.sendStream(c.agent, { ...p.message, caller: c.caller }, c.signal);
    if ('message' in r) return Promise.resolve(new StreamResult(one(v03AgentText(r.message.contextId, r.message.text, randomUUID()))));
    return Promise.resolve(new StreamResult(mapped(r.updates, v03StreamEvent)));
  },
  // v0.3 §7.7 leaves a finished task to the implementation: it is yielded, and the stream closes.
  'tasks/resubscribe': (bridge, params, c) => {
    const { id } = parseTaskIdParams(params);
    return Promise.resolve(new StreamResult(mapped(bridge.subscribe(c.agent, id, c.signal), v03StreamEvent)));
  },
};
