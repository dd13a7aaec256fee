import type { AgentConfig } from '../config/config.js';
import type { JsonObject } from './wire.js';

/** The product version shown in cards and `--version`. */
export const VERSION = '0.1.0';

/**
 * The v1.0 Agent Card of one agent (A2A v1.0 §4.4.1), served to a caller that asks for v1.0
 * (docs/discovery.md). `supportedInterfaces[0]` names the exact loopback URL of the agent's
 * JSON-RPC endpoint, because Hermes posts to that URL (Hermes Agent, plugins/platforms/a2a/tools.py).
 * The same URL answers the v0.3 method names (routing is by method name) and the HTTP+JSON routes
 * (A2A v1.0 §11.3; §8.3.1: "URLs MAY be reused if multiple transports are available at the same
 * endpoint").
 *
 * The card is pure v1.0 ProtoJSON: v1.0 protobuf parsers and the v1.0 conformance kit refuse
 * unknown top-level fields.
 *
 * @param endpoint e.g. `http://127.0.0.1:8765/agents/grok`
 */
export function agentCard(agent: AgentConfig, endpoint: string): JsonObject {
  return {
    name: agent.name,
    description: agent.description,
    supportedInterfaces: interfacesOf(endpoint),
    version: VERSION,
    capabilities: { streaming: true, pushNotifications: true, extendedAgentCard: false },
    securitySchemes: {
      bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', description: 'The bridge bearer token (server.bearer_file)' } },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    skills: skillsOf(agent),
  };
}

/** The interfaces of an agent, v1.0 JSON-RPC first (Hermes and A2A v1.0 §8.3.2 take the first one they support). */
function interfacesOf(endpoint: string): JsonObject[] {
  return [
    { url: endpoint, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    { url: endpoint, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    { url: endpoint, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
  ];
}

/**
 * The v0.3 Agent Card (A2A v0.3 §5.5: a top-level `url`, `protocolVersion`, `preferredTransport`),
 * served at `/.well-known/agent-card.json` to a caller that sends no `A2A-Version` (A2A v1.0
 * §3.6.2: "Agents MUST interpret empty value as 0.3 version") and at the legacy path
 * `/.well-known/agent.json`. With `embedV1Interfaces`, the v1.0 `supportedInterfaces` ride along,
 * as the official a2a-js SDK serves them (its `toCompatAgentCard(card, { embedV1Interfaces: true })`):
 * a v1.0 client that fetches the card without the header (Hermes) still finds its interface first.
 */
export function legacyAgentCard(agent: AgentConfig, endpoint: string, o: { embedV1Interfaces?: boolean } = {}): JsonObject {
  return {
    protocolVersion: '0.3.0',
    name: agent.name,
    description: agent.description,
    url: endpoint,
    preferredTransport: 'JSONRPC',
    version: VERSION,
    capabilities: { streaming: true, pushNotifications: true, stateTransitionHistory: false },
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'The bridge bearer token (server.bearer_file)' } },
    security: [{ bearer: [] }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    skills: skillsOf(agent),
    ...(o.embedV1Interfaces ? { supportedInterfaces: interfacesOf(endpoint) } : {}),
  };
}

function skillsOf(agent: AgentConfig): JsonObject[] {
  return agent.skills.length
    ? agent.skills.map((s) => ({ id: s.id, name: s.name, description: s.description, tags: s.tags }))
    : [
        {
          id: 'delegate',
          name: `Delegate a job to ${agent.name}`,
          description: `Hands a research or coding job to the cloud agent ${agent.name}. Answers at once with a working task; call again with the same contextId to get the result, which may take minutes to hours.`,
          tags: ['delegation', 'async', 'email'],
        },
      ];
}
