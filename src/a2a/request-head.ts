import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { isLoopbackLiteral, type AgentConfig } from '../config/config.js';
import { requestFields } from './request-fields.js';

/**
 * What the server reads off a request's head before it routes the call: whether the Host names a
 * loopback host, which agent the path names, how the audit names the caller. A client sends the
 * same head on every call, so each reader keeps its last answer and gives it again for the same
 * input (a string compared whole; none of these inputs is a secret): no regular expression, match
 * array or new string per call (bench/RESULTS.md, machine-limit).
 */

/**
 * The Host check (DNS rebinding): `header` must be `uri-host [":" port]` (RFC 9110 §7.2) whose
 * host is `localhost` or a loopback literal; a bracketed host must be an IPv6 literal (RFC 3986
 * §3.2.2); the port, if any, at most 65535. Any port: a loopback proxy in front of the bridge
 * passes its own Host (the name is what stops DNS rebinding), and the cards then name the URL the
 * caller reached us by.
 * @returns a check of one Host value (undefined or '' is refused); it remembers the last value allowed
 */
export function loopbackHostCheck(): (header: string | undefined) => boolean {
  let allowed: string | undefined;
  return (header) => {
    if (!header) return false;
    if (header === allowed) return true;
    const m = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/.exec(header.trim().toLowerCase());
    if (!m || Number(m[3] ?? 0) > 65535) return false;
    const name = m[1] ?? m[2]!;
    if (m[1] !== undefined && isIP(name) !== 6) return false;
    if (name !== 'localhost' && !isLoopbackLiteral(name)) return false;
    allowed = header;
    return true;
  };
}

/**
 * The caller as the audit entry names it: `a2a:` and the request's User-Agent cut to 120
 * characters (`a2a:unknown` without one).
 */
export function callerNames(): (req: IncomingMessage) => string {
  let lastUserAgent: string | undefined;
  let last = 'a2a:unknown';
  return (req) => {
    const ua = requestFields(req)['user-agent'];
    if (ua !== lastUserAgent) {
      lastUserAgent = ua;
      last = `a2a:${String(ua ?? 'unknown').slice(0, 120)}`;
    }
    return last;
  };
}

/** An agent's route: the agent a path under `/agents/<name>` names (undefined when it names none) and the rest of the path after the name (`''`, `/`, `/tasks/…`). */
export interface AgentRoute {
  agent: AgentConfig | undefined;
  rest: string;
}

/**
 * Reads `/agents/<name><rest>` off a request path (the path as request-target.ts `pathOf` gives it).
 * `<name>` is percent-decoded; a malformed percent-encoding names no agent.
 * @param agents the configured agents by name (they do not change while serving)
 * @returns null for a path not under `/agents/<name>`
 */
export function agentRoutes(agents: ReadonlyMap<string, AgentConfig>): (path: string) => AgentRoute | null {
  let lastPath: string | undefined;
  let last: AgentRoute | null = null;
  return (path) => {
    if (path === lastPath) return last;
    const m = /^\/agents\/([^/]+)(\/.*)?$/.exec(path);
    let route: AgentRoute | null = null;
    if (m) {
      let name: string | undefined;
      try {
        name = decodeURIComponent(m[1]!);
      } catch {
        name = undefined;
      }
      route = { agent: name !== undefined ? agents.get(name) : undefined, rest: m[2] ?? '' };
    }
    lastPath = path;
    last = route;
    return route;
  };
}

