import { describe, expect, it } from 'vitest';
import { isResponse, parseRequest, resultBytes, resultResponse, resultText } from '../../../src/a2a/jsonrpc.js';
import { JsonText } from '../../../src/a2a/call.js';
import { parseListParams, parseSendParams } from '../../../src/a2a/params.js';
import { A2AError } from '../../../src/a2a/errors.js';

const parse = (s: string) => parseRequest(Buffer.from(s), '1.0');

describe('parseRequest (JSON-RPC 2.0 envelope)', () => {
  it.each([
    ['{', -32700],
    ['[]', -32600],
    ['"x"', -32600],
    ['{"jsonrpc":"1.0","id":1,"method":"GetTask"}', -32600],
    ['{"jsonrpc":"2.0","method":"GetTask"}', -32600],
    ['{"jsonrpc":"2.0","id":{},"method":"GetTask"}', -32600],
    ['{"jsonrpc":"2.0","id":1,"method":""}', -32600],
    ['{"jsonrpc":"2.0","id":1,"method":"GetTask","params":3}', -32602],
  ])('%s → %i', (body, code) => {
    const r = parse(body);
    expect(isResponse(r)).toBe(true);
    expect((r as { error: { code: number } }).error.code).toBe(code);
  });

  it('a body that is not valid UTF-8 is -32700, even when it would parse with replacement characters', () => {
    const text = Buffer.from('{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"text":"caf');
    const body = Buffer.concat([text, Buffer.from([0xe9, 0xff]), Buffer.from('"}}}')]);
    const r = parseRequest(body, '1.0') as { id: unknown; error: { code: number; message: string } };
    expect(r.id).toBeNull();
    expect(r.error.code).toBe(-32700);
    expect(r.error.message).toMatch(/not valid UTF-8/);
    // A lone surrogate half encoded in UTF-8 (CESU-8) is not UTF-8 either.
    expect((parseRequest(Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22]), '0.3') as { error: { code: number } }).error.code).toBe(-32700);
    expect(parseRequest(Buffer.from('{"jsonrpc":"2.0","id":1,"method":"X","params":{"t":"café ☕"}}'), '1.0')).toEqual({ id: 1, method: 'X', params: { t: 'café ☕' } });
  });

  it('v1.0 errors carry google.rpc.ErrorInfo in data', () => {
    const r = parse('{') as { error: { data: unknown } };
    expect(r.error.data).toEqual([{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'PARSE_ERROR', domain: 'a2a-protocol.org' }]);
  });

  it('keeps a valid id for errors after the id was read', () => {
    expect(parse('{"jsonrpc":"2.0","id":"task-1","method":"GetTask","params":3}')).toMatchObject({ id: 'task-1' });
    expect(parse('{"jsonrpc":"2.0","id":7,"method":"X"}')).toEqual({ id: 7, method: 'X', params: undefined });
  });
});

describe('parseSendParams', () => {
  const hermes = {
    message: { role: 'ROLE_USER', parts: [{ text: 'do it', mediaType: 'text/plain' }], messageId: 'a'.repeat(32), contextId: 'ctx-0123456789abcdef' },
  };
  it('reads the body Hermes sends', () => {
    expect(parseSendParams(hermes, ['ROLE_USER'])).toMatchObject({ message: { messageId: 'a'.repeat(32), contextId: 'ctx-0123456789abcdef', text: 'do it' }, returnImmediately: false });
  });
  it('accepts snake_case and v0.3 blocking:false', () => {
    const p = parseSendParams({ message: { role: 'user', parts: [{ kind: 'text', text: 'x' }], message_id: 'm', context_id: 'c' }, configuration: { blocking: false, history_length: 2 } }, ['user']);
    expect(p).toMatchObject({ message: { messageId: 'm', contextId: 'c' }, historyLength: 2, returnImmediately: true });
  });
  it('the same content hashes the same, other content differently', () => {
    const a = parseSendParams(hermes, ['ROLE_USER']).message.contentSha256;
    expect(parseSendParams(structuredClone(hermes), ['ROLE_USER']).message.contentSha256).toBe(a);
    const other = structuredClone(hermes);
    other.message.parts[0]!.text = 'do that';
    expect(parseSendParams(other, ['ROLE_USER']).message.contentSha256).not.toBe(a);
  });
  it.each([
    [{}, 'invalidParams', /params.message must be an object/],
    [{ message: { role: 'ROLE_AGENT', parts: [{ text: 'x' }], messageId: 'm' } }, 'invalidParams', /role must be ROLE_USER/],
    [{ message: { role: 'ROLE_USER', parts: [], messageId: 'm' } }, 'invalidParams', /parts must be a non-empty array/],
    [{ message: { role: 'ROLE_USER', parts: [{ text: 'x' }] } }, 'invalidParams', /messageId is required/],
    [{ message: { role: 'ROLE_USER', parts: [{ url: 'https://x/y' }], messageId: 'm' } }, 'contentTypeNotSupported', /file parts/],
    [{ message: { role: 'ROLE_USER', parts: [{ text: 'x', data: {} }], messageId: 'm' } }, 'invalidParams', /exactly one of/],
    [{ message: { role: 'ROLE_USER', parts: [{ text: 'x' }], messageId: 'm', metadata: { deadline_s: 1 } } }, 'invalidParams', /deadline_s/],
    [{ message: { role: 'ROLE_USER', parts: [{ text: 'x' }], messageId: 'm' }, configuration: { taskPushNotificationConfig: { token: 'x' } } }, 'invalidParams', /taskPushNotificationConfig\.url/],
  ])('refuses %j', (params, kind, msg) => {
    try {
      parseSendParams(params, ['ROLE_USER']);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(A2AError);
      expect((err as A2AError).kind).toBe(kind);
      expect((err as Error).message).toMatch(msg);
    }
  });
});

describe('a refused message.role', () => {
  const refusal = (role: unknown, roles = ['ROLE_USER']): string => {
    try {
      parseSendParams({ message: { role, parts: [{ text: 'x' }], messageId: 'm' } }, roles);
    } catch (err) {
      return (err as Error).message;
    }
    return expect.unreachable();
  };
  it('names what came: a short name quoted, anything else only described', () => {
    expect(refusal('ROLE_AGENT')).toBe('message.role must be ROLE_USER (got "ROLE_AGENT")');
    expect(refusal(undefined)).toBe('message.role must be ROLE_USER (got none)');
    expect(refusal(1)).toBe('message.role must be ROLE_USER (got a number)');
    expect(refusal(null, ['user'])).toBe('message.role must be user (got null)');
    expect(refusal('x'.repeat(100))).toBe('message.role must be ROLE_USER (got a string of 100 characters)');
    expect(refusal('user\u202e')).toBe('message.role must be ROLE_USER (got a string of 5 characters)');
  });
  it("names the fix for the other dialect's spelling and for the SDK's UNRECOGNIZED", () => {
    expect(refusal('user')).toMatch(/\(got "user"\); "user" is the v0\.3 spelling, taken by message\/send/);
    expect(refusal('ROLE_USER', ['user'])).toMatch(/\(got "ROLE_USER"\); "ROLE_USER" is the v1\.0 spelling, taken by SendMessage/);
    expect(refusal('UNRECOGNIZED')).toMatch(/\(got "UNRECOGNIZED"\); the @a2a-js\/sdk client writes that .* role: Role\.ROLE_USER/);
  });
});

describe('parseListParams', () => {
  it('applies defaults and bounds', () => {
    expect(parseListParams({})).toMatchObject({ pageSize: 50, includeArtifacts: false });
    expect(parseListParams({ page_size: 5, status: 'TASK_STATE_WORKING', include_artifacts: true })).toMatchObject({ pageSize: 5, state: 'WORKING', includeArtifacts: true });
    expect(() => parseListParams({ pageSize: 0 })).toThrow(/pageSize/);
    expect(() => parseListParams({ pageSize: 101 })).toThrow(/pageSize/);
    expect(() => parseListParams({ status: 'working' })).toThrow(/TaskState/);
    expect(() => parseListParams({ statusTimestampAfter: 'yesterday' })).toThrow(/RFC 3339/);
    expect(() => parseListParams({ statusTimestampAfter: '-1' })).toThrow(/RFC 3339/);
    expect(parseListParams({ statusTimestampAfter: '2026-01-31T12:00:00Z' })).toMatchObject({ updatedAfter: Date.parse('2026-01-31T12:00:00Z') });
  });
});

describe('hostile message parts', () => {
  const msg = (parts: unknown[], extra: Record<string, unknown> = {}) => ({ message: { role: 'ROLE_USER', parts, messageId: 'm', ...extra } });
  it('refuses deeply nested data instead of amplifying it', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 6000; i++) deep = [deep];
    expect(() => parseSendParams(msg([{ data: deep }]), ['ROLE_USER'])).toThrow(/nests deeper than 32 levels/);
    let ok: unknown = 1;
    for (let i = 0; i < 10; i++) ok = [ok];
    expect(parseSendParams(msg([{ data: ok }]), ['ROLE_USER']).message.text).toContain('1');
  });
  it('refuses ids that are not well-formed UTF-16 and repairs lone surrogates in text', () => {
    expect(() => parseSendParams(msg([{ text: 'x' }], { contextId: 'ctx\ud800' }), ['ROLE_USER'])).toThrow(/well-formed/);
    expect(parseSendParams(msg([{ text: 'a\udc00b' }]), ['ROLE_USER']).message.text).toBe('a\ufffdb');
  });
});

describe('part media types', () => {
  const msg = (part: Record<string, unknown>) => ({ message: { role: 'ROLE_USER', parts: [part], messageId: 'm' } });
  it('refuses a text or data part whose mediaType the agent cannot receive (CORE-SEND-003)', () => {
    expect(() => parseSendParams(msg({ text: 'x', mediaType: 'image/png' }), ['ROLE_USER'])).toThrow(expect.objectContaining({ kind: 'contentTypeNotSupported' }));
    expect(() => parseSendParams(msg({ data: { a: 1 }, mediaType: 'application/pdf' }), ['ROLE_USER'])).toThrow(expect.objectContaining({ kind: 'contentTypeNotSupported' }));
    expect(parseSendParams(msg({ text: 'x', mediaType: 'text/markdown' }), ['ROLE_USER']).message.text).toBe('x');
    expect(parseSendParams(msg({ data: { a: 1 }, mediaType: 'application/vnd.x+json' }), ['ROLE_USER']).message.text).toContain('"a": 1');
  });
});

describe('resultText (the answer of a result serialised before)', () => {
  const result = { id: 'task-1', status: { state: 'TASK_STATE_WORKING', message: { parts: [{ text: 'quote " backslash \\ and \u2028' }] } }, n: -0, big: 1e21 };
  it.each([['a string id', 'req-"1"'], ['a number id', 42], ['a fractional id', -1.5], ['a null id', null]] as const)('with %s: the same bytes as JSON.stringify of the response, from the text or the object', (_, id) => {
    const expected = JSON.stringify(resultResponse(id, result));
    expect(resultText(id, new JsonText(JSON.stringify(result)))).toBe(expected);
    expect(resultText(id, result)).toBe(expected);
  });

  it.each([['a string id', 'req-"1" é'], ['a number id', 42], ['a fractional id', -1.5], ['a null id', null], ['a long id', 'x'.repeat(5000)]] as const)('resultBytes with %s: the UTF-8 bytes of the same answer, whole and nothing more', (_, id) => {
    const text = new JsonText(JSON.stringify({ ...result, more: 'é€😀 \ud83d', long: 'y'.repeat(3000) }));
    const expected = Buffer.from(JSON.stringify(resultResponse(id, JSON.parse(text.text))), 'utf8');
    // Twice: the result's bytes are made once and kept, the envelope is written anew for each id.
    expect(resultBytes(id, text).equals(expected)).toBe(true);
    expect(resultBytes(id, text).equals(expected)).toBe(true);
    expect(resultBytes(7, text).toString('utf8')).toBe(JSON.stringify(resultResponse(7, JSON.parse(text.text))));
  });
});
