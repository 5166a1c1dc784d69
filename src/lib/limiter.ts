// Bounded parallelism: at most `concurrency` tasks of one limiter run at once, the rest wait in
// order. Core calls go through one (64 user adds in flight is where a core's add rate levels off,
// probe §10), and the reconciler runs at most a few servers at a time through another.
export type Limiter = <T>(task: () => Promise<T>) => Promise<T>;

export function limiter(concurrency: number): Limiter {
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError("concurrency must be >= 1");
  let running = 0;
  const waiting: (() => void)[] = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    // A finishing task hands its slot straight to the next waiter, so no newcomer can squeeze in.
    if (running >= concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    else running += 1;
    try {
      return await task();
    } finally {
      const next = waiting.shift();
      if (next === undefined) running -= 1;
      else next();
    }
  };
}

/** Runs `fn` over every item through `limit`; resolves when all are done (rejections are returned). */
export async function settleAll<T, R>(
  items: readonly T[],
  limit: Limiter,
  fn: (item: T) => Promise<R>,
): Promise<PromiseSettledResult<R>[]> {
  return Promise.allSettled(items.map((item) => limit(() => fn(item))));
}

/**
 * `fn` over every item from `workers` loops that each take the next item: at most `workers` calls
 * at once, and only that many promises alive (10,000 users do not mean 10,000 pending closures).
 */
export async function eachWithWorkers<T>(
  items: readonly T[],
  workers: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next] as T;
      next += 1;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(workers, items.length) }, worker));
}

/** Splits a list into chunks of `size` (SQL parameter lists stay well under the drivers' limits). */
export function chunks<T>(items: readonly T[], size = 500): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
