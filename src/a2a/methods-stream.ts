import { randomUUID } from 'node:crypto';
import { isTerminal, type TaskUpdate } from '../core/task-follow.js';
import { A2AError } from './errors.js';
import type { Bridge } from '../core/bridge.js';
import type { TaskView } from '../core/task-view.js';
import { JsonText, StreamResult, type Handler } from './call.js';
import { parseSendParams, parseTaskIdParams } from './params.js';
import { v03StreamEvent, v1StreamResponse } from './stream-wire.js';
import { v1AgentText } from './wire.js';
import { v03AgentText } from './wire-v03.js';

/**
 * The streaming methods (docs/streaming.md): SendStreamingMessage and SubscribeToTask (A2A v1.0
 * §3.1.2, §3.1.6, §9.4.2, §9.4.6), `message/stream` and `tasks/resubscribe` (v0.3 §7.2, §7.7).
 */

/**
 * An update's wire text in one dialect, made once: the updates of a change are the same objects
 * for every stream of the task (src/core/task-follow.ts), so N streams cost one rendering per
 * dialect and N writes. The first event, the task, is keyed by its view: streams opened while the
 * task is unchanged get the same view from the view cache (Bridge.viewOf) and so the same text. A
 * stream's events carry no per-caller option (SubscribeToTask and tasks/resubscribe send the task
 * whole, with no historyLength), so the update (or view) and the dialect are the whole key. Weak:
 * an entry goes with its update or view.
 */
type Rendered = WeakMap<TaskUpdate | TaskView, JsonText>;
const V1_EVENTS: Rendered = new WeakMap();
const V03_EVENTS: Rendered = new WeakMap();

/** `updates` as wire events (JsonText, written as they are: src/a2a/sse.ts), each rendered at most once per dialect; counted in `a2a_mailbridge_stream_renders_total{stage="event"}`. */
async function* mapped(bridge: Bridge, updates: AsyncIterable<TaskUpdate>, render: (u: TaskUpdate) => unknown, rendered: Rendered): AsyncIterable<JsonText> {
  for await (const u of updates) {
    // A task update's text is its view's (`final` is not on the wire of a Task).
    const key = u.kind === 'task' ? u.task : u;
    let text = rendered.get(key);
    if (!text) {
      rendered.set(key, (text = new JsonText(JSON.stringify(render(u)))));
      bridge.ctx.metrics?.streamRenders.inc({ stage: 'event' });
    }
    yield text;
  }
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
    return Promise.resolve(new StreamResult(mapped(bridge, r.updates, v1StreamResponse, V1_EVENTS)));
  },
  SubscribeToTask: (bridge, params, c) => {
    const { id } = parseTaskIdParams(params);
    const view = bridge.viewOf(c.agent, id);
    // §3.1.6: UnsupportedOperationError for a task in a terminal state.
    if (isTerminal(view.state)) {
      throw new A2AError('unsupportedOperation', `Task ${id} is ${view.state.toLowerCase()}; there is nothing to subscribe to. GetTask returns its result.`);
    }
    return Promise.resolve(new StreamResult(mapped(bridge, bridge.subscribe(c.agent, id, c.signal), v1StreamResponse, V1_EVENTS)));
  },
};

export const V03_STREAM_METHODS: Readonly<Record<string, Handler>> = {
  'message/stream': (bridge, params, c) => {
    const p = parseSendParams(params, ['user']);
    const r = bridge.sendStream(c.agent, { ...p.message, caller: c.caller }, c.signal);
    if ('message' in r) return Promise.resolve(new StreamResult(one(v03AgentText(r.message.contextId, r.message.text, randomUUID()))));
    return Promise.resolve(new StreamResult(mapped(bridge, r.updates, v03StreamEvent, V03_EVENTS)));
  },
  // v0.3 §7.7 leaves a finished task to the implementation: it is yielded, and the stream closes.
  'tasks/resubscribe': (bridge, params, c) => {
    const { id } = parseTaskIdParams(params);
    return Promise.resolve(new StreamResult(mapped(bridge, bridge.subscribe(c.agent, id, c.signal), v03StreamEvent, V03_EVENTS)));
  },
};
