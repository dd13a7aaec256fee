import type { Role, TaskState } from '@a2a-js/sdk';

/**
 * The A2A v1.0 wire shape (ProtoJSON) derived from the official SDK's types.
 *
 * `@a2a-js/sdk` exports the v1.0 objects as ts-proto message types (`Task`, `Message`, `Part`, …):
 * the in-memory form, with enums as numbers and `oneof` members as `{ $case, value }`. The JSON a
 * v1.0 peer sends is the ProtoJSON mapping of the same messages (A2A v1.0 §5.6: camelCase member
 * names, enums by value name, `bytes` as base64, a `oneof` as the one member that is set, default
 * values omitted). `ProtoJson<T>` applies that mapping to an SDK type, so a member the SDK renames,
 * retypes or drops is a compile error wherever our wire output is typed with it.
 *
 * Every member is optional, as ProtoJSON omits default values; {@link Narrow} marks the members a
 * producer always sets.
 */
export type ProtoJson<T> =
  IsAny<T> extends true
    ? unknown
    : T extends number
      ? `${number}` extends `${T}`
        ? number
        : EnumName<T>
      : T extends string | boolean
        ? T
        : T extends Uint8Array
          ? string
          : T extends readonly (infer E)[]
            ? ProtoJson<E>[]
            : T extends object
              ? ProtoJsonMessage<T>
              : never;

/** Enum value names as ProtoJSON writes them (`TASK_STATE_WORKING`, `ROLE_AGENT`). */
export type TaskStateName = Exclude<keyof typeof TaskState, 'UNRECOGNIZED'>;
export type RoleName = Exclude<keyof typeof Role, 'UNRECOGNIZED'>;

/**
 * `P` with the members in `R` made required and narrowed to what a producer always sends. Each key
 * of `R` must be a member of `P` and each type assignable to the member's, so a drift of the SDK's
 * shape away from ours fails to compile here.
 */
export type Narrow<P, R extends { [K in keyof R]: K extends keyof P ? P[K] : never }> = Omit<P, keyof R> & R;

type IsAny<T> = 0 extends 1 & T ? true : false;

/** The enums the v1.0 Task and Message carry; another enum maps to `never` until it is named here. */
type EnumName<T> = T extends TaskState ? TaskStateName : T extends Role ? RoleName : never;

/** Members holding a ts-proto `oneof` (`{ $case, value }`). */
type OneofKeys<T> = { [K in keyof T]-?: IsAny<T[K]> extends true ? never : NonNullable<T[K]> extends { $case: string } ? K : never }[keyof T];

/**
 * A `oneof` on the wire: exactly the member that is set, under its own name; the other members are
 * absent (typed `?: never`, so a reader may ask for any of them and gets `undefined`).
 */
type OneofJson<V> = [V] extends [{ $case: string }] ? OneofCase<V, V['$case']> : never;
type OneofCase<V, All extends string> = V extends { $case: infer C extends string; value: infer X }
  ? { [P in C]: ProtoJson<X> } & { [P in Exclude<All, C>]?: never }
  : never;

type ProtoJsonMessage<T> = { [K in Exclude<keyof T, OneofKeys<T>>]?: ProtoJson<Exclude<T[K], undefined>> } & ([OneofKeys<T>] extends [never]
  ? unknown
  : OneofJson<NonNullable<T[OneofKeys<T>]>>);
