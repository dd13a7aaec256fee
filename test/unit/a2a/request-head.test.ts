import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { AgentConfig } from '../../../src/config/config.js';
import { agentRoutes, callerNames, loopbackHostCheck } from '../../../src/a2a/request-head.js';

// Each reader keeps its last answer: every case alternates inputs, so an answer kept for the wrong input fails.
describe('request-head readers (each keeps its last answer, never for another input)', () => {
  it('agentRoutes: the agent and the rest of the path, for paths asked in turn and again', () => {
    const grok = { name: 'grok' } as AgentConfig;
    const ana = { name: 'ana lyst' } as AgentConfig;
    const route = agentRoutes(new Map([['grok', grok], ['ana lyst', ana]]));
    for (let i = 0; i < 2; i++) {
      expect(route('/agents/grok')).toEqual({ agent: grok, rest: '' });
      expect(route('/agents/grok')).toEqual({ agent: grok, rest: '' });
      expect(route('/agents/grok/')).toEqual({ agent: grok, rest: '/' });
      expect(route('/agents/ana%20lyst/tasks/t1')).toEqual({ agent: ana, rest: '/tasks/t1' });
      expect(route('/agents/nobody')).toEqual({ agent: undefined, rest: '' });
      expect(route('/agents/%E0%A4%A')).toEqual({ agent: undefined, rest: '' });
      expect(route('/health')).toBeNull();
      expect(route('/agents/')).toBeNull();
      expect(route('/agents/grok/.well-known/agent-card.json')).toEqual({ agent: grok, rest: '/.well-known/agent-card.json' });
    }
  });

  it('callerNames: a2a: and the User-Agent cut to 120 characters, following the header as it changes', () => {
    const callerOf = callerNames();
    const req = (ua?: string) => ({ rawHeaders: ua === undefined ? [] : ['User-Agent', ua] }) as unknown as IncomingMessage;
    expect(callerOf(req())).toBe('a2a:unknown');
    expect(callerOf(req('hermes/1'))).toBe('a2a:hermes/1');
    expect(callerOf(req('hermes/1'))).toBe('a2a:hermes/1');
    expect(callerOf(req('sdk/2'))).toBe('a2a:sdk/2');
    expect(callerOf(req())).toBe('a2a:unknown');
    expect(callerOf(req('u'.repeat(500)))).toBe(`a2a:${'u'.repeat(120)}`);
  });

  it('loopbackHostCheck: a Host allowed once does not let another through, nor the empty one', () => {
    const allowed = loopbackHostCheck();
    for (let i = 0; i < 2; i++) {
      expect(allowed('127.0.0.1:8080')).toBe(true);
      expect(allowed('evil.example:8080')).toBe(false);
      expect(allowed('127.0.0.1:8080')).toBe(true);
      expect(allowed('[::1]')).toBe(true);
      expect(allowed('localhost:99999')).toBe(false);
      expect(allowed('[localhost]')).toBe(false);
      expect(allowed('')).toBe(false);
      expect(allowed(undefined)).toBe(false);
      expect(allowed('LOCALHOST')).toBe(true);
    }
  });
});
