/**
 * What a webhook attempt's stored error says beyond its HTTP status. src/downlink/deliver.ts
 * records an answer that is only a status as the error `HTTP 503` beside http_status 503: the
 * error column stays the self-contained reason that a task's cause ("dispatch exhausted after
 * … : HTTP 503") and the caller's status text ("attempt 1: HTTP 503") quote. A CLI line that
 * states the status already, `(HTTP 503)`, adds only what is left: nothing for that row, any other
 * detail as written (a network error, a timeout, text after the status). Rows of older stores are
 * read the same way.
 *
 * @returns the detail to print after the status, or null when the error only repeats the status
 *   (or there is none)
 */
export function attemptDetail(httpStatus: number | null, error: string | null): string | null {
  if (!error) return null;
  if (httpStatus === null) return error;
  const rest = error.replace(new RegExp(`^\\s*HTTP ${httpStatus}(?!\\d)[\\s:;,.-]*`), '');
  return rest === '' ? null : rest;
}

/**
 * The status and detail of an attempt as the CLI's lines write them after its outcome:
 * ` (HTTP 503)`, ` (HTTP 503): <detail>`, `: timed out after 10000 ms`, or '' ({@link attemptDetail}).
 */
export function statusAndDetail(httpStatus: number | null, error: string | null): string {
  const detail = attemptDetail(httpStatus, error);
  return `${httpStatus !== null ? ` (HTTP ${httpStatus})` : ''}${detail !== null ? `: ${detail}` : ''}`;
}

/**
 * An attempt that has an outcome, as the CLI's lines say it: `attempt 2 failed (HTTP 503)`,
 * `attempt 1 refused (HTTP 404): <detail>` (a `retry` outcome reads "failed"; {@link statusAndDetail}).
 */
export function attemptOutcome(a: { attempt: number; outcome: string; httpStatus: number | null; error: string | null }): string {
  return `attempt ${a.attempt} ${a.outcome === 'retry' ? 'failed' : a.outcome}${statusAndDetail(a.httpStatus, a.error)}`;
}
