/**
 * The peer a developer would pick instead: an A2A JSON-RPC server built from the official
 * `@a2a-js/sdk` — `DefaultRequestHandler` + its express `jsonRpcHandler` + `InMemoryTaskStore` —
 * with an executor that leaves the task in WORKING, as the bridge does while the cloud agent works.
 * The task it stores is built to match the bridge's: the same status text (taken from the
 * message's metadata `statusText`), the caller's message as history, the same metadata keys.
 * No authentication (UserBuilder.noAuthentication): the SDK peer does less work per call than
 * the bridge, which checks the Host header and a bearer on every call.
 */
import express from 'express';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Role, TaskState, type AgentCard } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { serveParent } from './child.js';

const executor: AgentExecutor = {
  execute(ctx, bus) {
    const user = ctx.userMessage;
    const statusText = String(user.metadata?.statusText ?? 'The job is with the cloud agent.');
    const now = new Date();
    bus.publish(
      AgentEvent.task({
        id: ctx.taskId,
        contextId: ctx.contextId,
        status: {
          state: TaskState.TASK_STATE_WORKING,
          timestamp: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
          message: {
            messageId: `status-${ctx.taskId}`,
            contextId: ctx.contextId,
            taskId: ctx.taskId,
            role: Role.ROLE_AGENT,
            parts: [{ content: { $case: 'text', value: statusText }, mediaType: 'text/plain', metadata: undefined, filename: '' }],
            metadata: undefined,
            extensions: [],
            referenceTaskIds: [],
          },
        },
        artifacts: [],
        history: [{ ...user, metadata: undefined, taskId: ctx.taskId, contextId: ctx.contextId }],
        metadata: { agent: 'grok', turn: 1, createdAt: now.toISOString(), deadline: new Date(now.getTime() + 3600_000).toISOString() },
      }),
    );
    bus.finished();
    return Promise.resolve();
  },
  async cancelTask() {},
};

const app = express();
const server = app.listen(0, '127.0.0.1');
await new Promise<void>((resolve) => server.once('listening', () => resolve()));
const port = (server.address() as AddressInfo).port;
const url = `http://127.0.0.1:${port}/a2a`;
const card: AgentCard = {
  name: 'sdk-peer',
  description: 'Benchmark peer',
  supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
  provider: undefined,
  version: '1.0.0',
  capabilities: { streaming: false, pushNotifications: false, extensions: [] },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [],
  signatures: [],
};
const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
app.use('/a2a', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

serveParent({ endpoint: url, port, instance: randomUUID() }, (m) => Promise.reject(new Error(`unknown request ${String(m.type)}`)), () => new Promise<void>((resolve) => {
  server.close(() => resolve());
  server.closeAllConnections();
}));
