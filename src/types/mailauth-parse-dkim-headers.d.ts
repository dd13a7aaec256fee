// mailauth 4.13 ships no types for its tag/A-R header parser; the tests cross-check our
// Authentication-Results parser against it (test/unit/uplink/auth-results.test.ts).
declare module 'mailauth/lib/parse-dkim-headers.js' {
  /** `parsed` holds `header` (the field name), `value` (the first bare word) and one key per method or tag. */
  function parseDkimHeaders(line: string | Buffer): { parsed: Record<string, unknown>; original: string | Buffer };
  export = parseDkimHeaders;
}
