/**
 * Counts turns of the event loop (setImmediate callbacks) until stopped: how a test shows that
 * work yielded between its slices, without reading a clock.
 */
export function turnCounter(): { turns: () => number; stop: () => void } {
  let n = 0;
  let on = true;
  const tick = (): void => {
    if (!on) return;
    n++;
    setImmediate(tick);
  };
  setImmediate(tick);
  return { turns: () => n, stop: () => void (on = false) };
}
