import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { REST_ROUTES, routeRest, type RestRoute } from '../../../src/a2a/rest.js';

/**
 * docs/http-json.md's route table is the routes src/a2a/rest.ts serves: each documented row is
 * routed by routeRest to its method, with its path params and params from where the row says, and
 * every route of rest.ts is a row. So the table cannot go stale.
 */

/** The rows of the table under "## Routes" in docs/http-json.md, each cell without its backticks. */
function documentedRoutes(): RestRoute[] {
  const doc = readFileSync('docs/http-json.md', 'utf8');
  const section = doc.slice(doc.indexOf('## Routes'), doc.indexOf('\n## ', doc.indexOf('## Routes') + 1));
  const rows = section.split('\n').filter((l) => l.startsWith('| `'));
  return rows.map((row) => {
    const cells = row.split(' | ').map((c) => c.replace(/^\| /, ''));
    const bare = (c: string): string => /^`([^`]+)`/.exec(c)![1]!;
    return { http: bare(cells[0]!) as RestRoute['http'], path: bare(cells[1]!), method: bare(cells[2]!), params: bare(cells[3]!) as RestRoute['params'] };
  });
}

describe('the HTTP+JSON route table (docs/http-json.md)', () => {
  const documented = documentedRoutes();

  it('lists every route rest.ts serves, and only those', () => {
    expect(documented.length).toBeGreaterThanOrEqual(12);
    expect(documented).toEqual([...REST_ROUTES]);
  });

  it.each(documented.map((r) => [`${r.http} ${r.path}`, r] as const))('%s is routed to its method, path params and params as documented', (_, r) => {
    // Each {name} as a value that needs percent-decoding; a query the route reads only when documented so.
    const names = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const path = r.path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(`${name} value/1`));
    const call = routeRest(r.http, path, new URL(`http://127.0.0.1/agents/grok${path}?historyLength=2&A2A-Version=1.0`));
    expect(call).toEqual({
      method: r.method,
      params: { ...(r.params === 'query' ? { historyLength: 2 } : {}), ...Object.fromEntries(names.map((n) => [n, `${n} value/1`])) },
      body: r.params === 'body',
    });
    if (r.http === 'GET') expect(routeRest('HEAD', path, new URL('http://127.0.0.1/'))).toMatchObject({ method: r.method });
    // Any other HTTP method on the path: 405 naming the documented ones.
    const allowed = documented.filter((d) => d.path === r.path).map((d) => d.http);
    for (const other of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((h) => !allowed.includes(h as RestRoute['http']))) {
      expect(routeRest(other, path, new URL('http://127.0.0.1/')), `${other} ${r.path}`).toEqual({ allow: ['GET', 'HEAD', 'POST', 'DELETE'].filter((h) => allowed.includes((h === 'HEAD' ? 'GET' : h) as RestRoute['http'])).join(', ') });
    }
  });

  it("a 405's Allow names HEAD wherever GET is allowed (RFC 9110 §10.2.1)", () => {
    const u = new URL('http://127.0.0.1/');
    expect(routeRest('POST', '/tasks/t1', u)).toEqual({ allow: 'GET, HEAD' });
    expect(routeRest('PUT', '/tasks/t1/pushNotificationConfigs/c1', u)).toEqual({ allow: 'GET, HEAD, DELETE' });
    expect(routeRest('GET', '/message:send', u)).toEqual({ allow: 'POST' });
  });

  it('a path no row names is no route (404)', () => {
    for (const path of ['/nothing/here', '/tasks/x:archive', '/tasks/x/pushNotificationConfigs/c/more', '/message', '/tasks/%E0%A4%A']) {
      expect(routeRest('GET', path, new URL('http://127.0.0.1/')), path).toBeNull();
    }
  });
});
