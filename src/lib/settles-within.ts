// Waiting for something without being held by it: a bounded wait whose timer never outlives it.
import { setTimeout as delay } from "node:timers/promises";

/** Whether `promise` settles (either way) within `ms`; the timer is cleared either way. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const timer = new AbortController();
  const settled = promise.then(
    () => true,
    () => true,
  );
  const result = await Promise.race([settled, delay(ms, false, { signal: timer.signal }).catch(() => true)]);
  timer.abort();
  return result;
}
