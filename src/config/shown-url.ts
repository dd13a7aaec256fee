/**
 * A webhook URL as the bridge shows or logs it: a query string (and a fragment) may carry a
 * secret (`https://hook.example/x?key=…`, as some trigger services issue), so it is replaced by
 * `?<redacted>` (`#<redacted>`). The URL itself, whole, is used only for the POST.
 */

/** `url` with its query and fragment redacted; text that is no URL has everything from the first `?` or `#` redacted. */
export function shownUrl(url: URL | string): string {
  if (typeof url === 'string') {
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      return url.replace(/\?[^#]*/, '?<redacted>').replace(/#.*/, '#<redacted>');
    }
    url = parsed;
  }
  const query = url.search ? '?<redacted>' : '';
  const fragment = url.hash ? '#<redacted>' : '';
  return `${url.origin}${url.pathname}${query}${fragment}`;
}
