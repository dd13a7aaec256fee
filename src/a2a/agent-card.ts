import type { AgentConfig } from '../config/config.js';
import type { JsonObject } from './wire.js';

/** The product version shown in cards and `--version`. */
export const VERSION = '0.1.0';

/**
 * The v1.0 Agent Card of one agent (A2A v1.0 §4.4.1). `supportedInterfaces[0]` names the exact
 * loopback URL of the agent's JSON-RPC endpoint, because Hermes posts to that URL (Hermes Agent,
 * plugins/platforms/a2a/tools.py). `capabilities.streaming` stays false until streaming is complete
 * (newer Hermes builds stream when it is true). A second interface entry says the same URL also
 * answers the v0.3 method names (routing is by method name).
 *
 * The card is pure v1.0 ProtoJSON. A card that also carried the v0.3 fields would break strict
 * readers: v1.0 protobuf parsers refuse unknown fields, and v0.3 parsers need a `type` in each
 * security scheme, which makes the a2a-js SDK read the whole card as the JSON-Schema dialect.
 * v0.3 clients read {@link legacyAgentCard} at `/.well-known/agent.json` instead.
 *
 * @param endpoint e.g. `http://127.0.0.1:8765/agents/grok`
 */
export function agentCard(agent: AgentConfig, endpoint: string): JsonObject {
  return {
    name: agent.name,
    description: agent.description,
    supportedInterfaces: [
      { url: endpoint, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: endpoint, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ],
    version: VERSION,
    capabilities: { streaming: false, pushNotifications: false, extendedAgentCard: false },
    securitySchemes: {
      bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', description: 'The bridge bearer token (server.bearer_file)' } },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    skills: skillsOf(agent),
  };
}

/**
 * The v0.3 Agent Card served at the legacy path `/.well-known/agent.json` (in A2A v0.3, cards have
 * a top-level `url` and `protocolVersion`).
 */
export function legacyAgentCard(agent: AgentConfig, endpoint: string): JsonObject {
  return {
    protocolVersion: '0.3.0',
    name: agent.name,
    description: agent.description,
    url: endpoint,
    preferredTransport: 'JSONRPC',
    version: VERSION,
    capabilities: { streaming: false, pushNotifications: false, stateTransitionHistory: false },
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'The bridge bearer token (server.bearer_file)' } },
    security: [{ bearer: [] }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    skills: skillsOf(agent),
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
