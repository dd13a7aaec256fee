/**
 * A loopback OAuth2 authorization server for the IMAP sign-in tests, on node:http: the
 * token endpoint (RFC 6749 §6 refresh grant, RFC 8628 §3.4 device-code grant), the device
 * authorization endpoint (RFC 8628 §3.1) and the token introspection endpoint Dovecot's `oauth2`
 * passdb asks (RFC 7662). Access tokens expire on this server's clock (real time); the test can
 * expire or revoke a token, or revoke the refresh token, at any moment.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { once } from 'node:events';

export interface OAuthServer {
  url: string;
  tokenUrl: string;
  deviceUrl: string;
  introspectionUrl: string;
  /** The user introspection names (Dovecot compares it with the login name). */
  username: string;
  /** The refresh tokens the server accepts (add one to hand out a grant). */
  refreshTokens: Set<string>;
  /** Access tokens issued, in order, with whether they are still active. */
  issued: { token: string; active: boolean }[];
  /** Refresh-grant requests received. */
  refreshRequests: number;
  /** Token and introspection request bodies, for the no-secret-in-logs check. */
  bodies: string[];
  /** Lifetime of the next access tokens, in seconds (sent as expires_in). */
  expiresIn: number;
  /** Device flow: polls answered authorization_pending before the grant is approved. */
  pendingPolls: number;
  /** Makes the access token inactive (introspection answers active: false). */
  deactivate(token: string): void;
  close(): Promise<void>;
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startOAuthServer(o: { username: string; clientId: string }): Promise<OAuthServer> {
  let n = 0;
  const s: Omit<OAuthServer, 'url' | 'tokenUrl' | 'deviceUrl' | 'introspectionUrl' | 'close'> = {
    username: o.username,
    refreshTokens: new Set(),
    issued: [],
    refreshRequests: 0,
    bodies: [],
    expiresIn: 3600,
    pendingPolls: 1,
    deactivate(token) {
      const t = s.issued.find((x) => x.token === token);
      if (t) t.active = false;
    },
  };
  const issue = (): { access_token: string; token_type: string; expires_in: number } => {
    n += 1;
    const token = `at-${n}-${'x'.repeat(24)}`;
    s.issued.push({ token, active: true });
    return { access_token: token, token_type: 'Bearer', expires_in: s.expiresIn };
  };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const text = await body(req);
      s.bodies.push(text);
      const form = new URLSearchParams(text);
      const json = (status: number, v: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(v));
      };
      if (req.method !== 'POST') return json(405, { error: 'invalid_request' });
      if (req.url === '/introspect') {
        const t = s.issued.find((x) => x.token === form.get('token'));
        return json(200, t?.active ? { active: true, username: s.username } : { active: false });
      }
      if (req.url === '/device') {
        if (form.get('client_id') !== o.clientId) return json(400, { error: 'invalid_client' });
        return json(200, { device_code: 'dev-code-1', user_code: 'WDJB-MJHT', verification_uri: `http://127.0.0.1/verify`, expires_in: 600, interval: 0 });
      }
      if (req.url === '/token') {
        if (form.get('client_id') !== o.clientId) return json(401, { error: 'invalid_client' });
        const grant = form.get('grant_type');
        if (grant === 'refresh_token') {
          s.refreshRequests += 1;
          if (!s.refreshTokens.has(form.get('refresh_token') ?? '')) return json(400, { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' });
          return json(200, issue());
        }
        if (grant === 'urn:ietf:params:oauth:grant-type:device_code') {
          if (form.get('device_code') !== 'dev-code-1') return json(400, { error: 'invalid_grant' });
          if (s.pendingPolls > 0) {
            s.pendingPolls -= 1;
            return json(400, { error: 'authorization_pending' });
          }
          const refresh = `rt-device-${'y'.repeat(24)}`;
          s.refreshTokens.add(refresh);
          return json(200, { ...issue(), refresh_token: refresh });
        }
        return json(400, { error: 'unsupported_grant_type' });
      }
      return json(404, { error: 'not_found' });
    })();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const url = `http://127.0.0.1:${port}`;
  return Object.assign<typeof s, Pick<OAuthServer, 'url' | 'tokenUrl' | 'deviceUrl' | 'introspectionUrl' | 'close'>>(s, {
    url,
    tokenUrl: `${url}/token`,
    deviceUrl: `${url}/device`,
    introspectionUrl: `${url}/introspect`,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close').catch(() => undefined);
    },
  });
}
