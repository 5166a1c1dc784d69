// Login throttling: failures are counted per IP and per username in a sliding window; past the
// limit, attempts are refused with a Retry-After until the oldest failure leaves the window.
// In memory, so per instance (documented in docs/API.md).

export type ThrottleOptions = { windowMs: number; maxPerUsername: number; maxPerIp: number };

export const defaultThrottle: ThrottleOptions = { windowMs: 15 * 60_000, maxPerUsername: 5, maxPerIp: 20 };

export class LoginThrottle {
  readonly #failures = new Map<string, number[]>();

  constructor(
    private readonly options: ThrottleOptions = defaultThrottle,
    private readonly now: () => number = Date.now,
  ) {}

  /** Seconds to wait before another attempt is allowed, or 0 when allowed now. */
  retryAfterSeconds(ip: string, username: string): number {
    const waits = [
      this.#wait(`ip:${ip}`, this.options.maxPerIp),
      this.#wait(`user:${username.toLowerCase()}`, this.options.maxPerUsername),
    ];
    return Math.max(...waits);
  }

  recordFailure(ip: string, username: string): void {
    for (const key of [`ip:${ip}`, `user:${username.toLowerCase()}`]) {
      const list = this.#recent(key);
      list.push(this.now());
      this.#failures.set(key, list);
    }
  }

  recordSuccess(username: string): void {
    this.#failures.delete(`user:${username.toLowerCase()}`);
  }

  #recent(key: string): number[] {
    const since = this.now() - this.options.windowMs;
    const list = (this.#failures.get(key) ?? []).filter((t) => t > since);
    if (list.length === 0) this.#failures.delete(key);
    return list;
  }

  #wait(key: string, max: number): number {
    const list = this.#recent(key);
    if (list.length < max) return 0;
    const oldestThatMatters = list[list.length - max] ?? this.now();
    return Math.max(1, Math.ceil((oldestThatMatters + this.options.windowMs - this.now()) / 1000));
  }
}
