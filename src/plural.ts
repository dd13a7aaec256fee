/**
 * `3 tasks`, `1 task`, `0 messages`: a count and its noun, in the singular only for exactly one.
 * Every count in a message a person reads goes through this (never `task(s)`).
 *
 * @param n a whole number
 * @param noun the singular form
 * @param pluralNoun the plural when it is not `noun + "s"` (`entry` → `entries`)
 */
export function plural(n: number, noun: string, pluralNoun = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : pluralNoun}`;
}
