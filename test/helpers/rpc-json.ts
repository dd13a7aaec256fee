/**
 * Types for reading the bridge's JSON-RPC answers in tests: the envelope, the error object (as the
 * SDK's own v1.0 JSON-RPC server writes it, from `@a2a-js/sdk/server`) and the result
 * of each method, typed with the wire types of src/a2a (the SDK's v1.0 and v0.3 shapes). A body is
 * typed by its `method`, so `rpc({ method: 'GetTask', … })` reads as a Task.
 */
import type { JsonRpcTransportHandler } from '@a2a-js/sdk/server';
import type { V1ListTasksResult, V1Message, V1Task } from '../../src/a2a/wire.js';
import type { V03Message, V03Task } from '../../src/a2a/wire-v03.js';

/** A JSON-RPC error object (JSON-RPC 2.0 §5.1; v1.0 puts `google.rpc.ErrorInfo` details in `data`, v0.3 none). */
export type RpcError = ReturnType<typeof JsonRpcTransportHandler.mapToJSONRPCError>;

/**
 * A JSON-RPC 2.0 answer: exactly one of `result` and `error` is present (JSON-RPC 2.0 §5).
 * A body that is not JSON at all is not an answer; the harnesses leave it as the text (or
 * `undefined`), on which both members read as absent.
 */
export interface RpcAnswer<R = unknown> {
  jsonrpc: string;
  id: string | number | null;
  result?: R;
  error?: RpcError;
}

/**
 * A union read member by member: every member of either side, optional. This is how a test reads
 * a `oneof` (v1.0 `SendMessageResponse`: `task` or `message`) or a v0.3 result that is a Task or a
 * Message before it has looked at `kind`.
 */
export type EitherOf<A, B> = {
  [K in keyof A | keyof B]?: (K extends keyof A ? A[K] : never) | (K extends keyof B ? B[K] : never);
};

/** The v1.0 `SendMessage` result (`SendMessageResponse`, a `oneof`). */
export type V1SendResult = EitherOf<{ task: V1Task }, { message: V1Message }>;
/** The v0.3 `message/send` result: a Task or a Message. */
export type V03SendResult = EitherOf<V03Task, V03Message>;

/** The result each method answers with; `unknown` for a method the bridge does not serve. */
export interface RpcResults {
  SendMessage: V1SendResult;
  GetTask: V1Task;
  CancelTask: V1Task;
  ListTasks: V1ListTasksResult;
  'message/send': V03SendResult;
  'tasks/get': V03Task;
  'tasks/cancel': V03Task;
}

export type ResultOf<M> = M extends keyof RpcResults ? RpcResults[M] : unknown;

/** The result type of a request body, by its `method` (`unknown` for a body given as a string). */
export type ResultOfBody<B> = B extends { method: infer M } ? ResultOf<M> : unknown;
