// Login throttling. Three budgets of failures in a sliding window: per (username, client address),
// per address (one client spraying usernames) and a much larger ceiling per username (many
// addresses guessing one password). An attempt is *reserved* before the password is checked and
// counts against every budget while it runs, so concurrent guesses cannot all slip in before the
// first failure is recorded. A client that failed never blocks another: the admin's own address
// has its own budget. Past the ceiling every address waits, except one that signed in as that
// username before and has not failed since (remembered per instance). In memory, per instance
// (docs/API.md, docs/SECURITY.md).
import { RateLimitedError } from "../../lib/errors.ts";

export type ThrottleOptions = {
  windowMs: number;
  maxPerUsernameAndIp: number;
  maxPerIp: number;
  maxPerUsername: number;
  /** How long a successful sign-in keeps its address past the per-username ceiling. */
  trustedForMs: number;
};

export const defaultThrottle: ThrottleOptions = {
  windowMs: 15 * 60_000,
  maxPerUsernameAndIp: 5,
  maxPerIp: 20,
  maxPerUsername: 50,
  trustedForMs: 30 * 86_400_000,
};

/** Past this many tracked keys, the next reservation first drops every key with nothing recent. */
const SWEEP_AT = 10_000;

export type LoginAttempt = {
  /** The password was wrong: counts against every budget. */
  failed(): void;
  /** Signed in: clears this client's failures for the username and remembers the address. */
  succeeded(): void;
  /** Ends the reservation if neither of the above did (an unexpected error): idempotent. */
  release(): void;
};

type Keys = { pair: string; ip: string; user: string };

export class LoginThrottle {
  readonly #failures = new Map<string, number[]>();
  readonly #inFlight = new Map<string, number>();
  /** `user:<name>|<ip>` → time of the last successful sign-in from that address. */
  readonly #trusted = new Map<string, number>();

  constructor(
    private readonly options: ThrottleOptions = defaultThrottle,
    private readonly now: () => number = Date.now,
  ) {}

  /** Reserves one attempt synchronously, or throws RateLimitedError (429) with the wait. */
  reserve(ip: string, username: string): LoginAttempt {
    if (this.#failures.size + this.#trusted.size > SWEEP_AT) this.#sweep();
    const name = username.toLowerCase();
    const keys: Keys = { pair: `pair:${name}|${ip}`, ip: `ip:${ip}`, user: `user:${name}` };
    const trustKey = `${keys.user}|${ip}`;
    const isTrusted = (this.#trusted.get(trustKey) ?? -Infinity) > this.now() - this.options.trustedForMs;
    const wait = Math.max(
      this.#wait(keys.pair, this.options.maxPerUsernameAndIp),
      this.#wait(keys.ip, this.options.maxPerIp),
      isTrusted ? 0 : this.#wait(keys.user, this.options.maxPerUsername),
    );
    if (wait > 0) throw new RateLimitedError("too many failed logins; try again later", wait);
    const all = [keys.pair, keys.ip, keys.user];
    for (const key of all) this.#inFlight.set(key, (this.#inFlight.get(key) ?? 0) + 1);
    let open = true;
    const end = () => {
      if (!open) return false;
      open = false;
      for (const key of all) {
        const left = (this.#inFlight.get(key) ?? 1) - 1;
        if (left > 0) this.#inFlight.set(key, left);
        else this.#inFlight.delete(key);
      }
      return true;
    };
    return {
      failed: () => {
        if (!end()) return;
        this.#trusted.delete(trustKey);
        for (const key of all) this.#failures.set(key, [...this.#recent(key), this.now()]);
      },
      succeeded: () => {
        if (!end()) return;
        this.#failures.delete(keys.pair);
        this.#trusted.set(trustKey, this.now());
      },
      release: () => {
        end();
      },
    };
  }

  #recent(key: string): number[] {
    const since = this.now() - this.options.windowMs;
    const list = (this.#failures.get(key) ?? []).filter((t) => t > since);
    if (list.length === 0) this.#failures.delete(key);
    return list;
  }

  /** Seconds until one more attempt fits in the budget of `key` (failures plus running attempts). */
  #wait(key: string, max: number): number {
    const list = this.#recent(key);
    const running = this.#inFlight.get(key) ?? 0;
    if (list.length + running < max) return 0;
    // Room appears when enough failures leave the window; running attempts end within a second.
    const mustLeave = list.length + running - max + 1;
    const oldest = mustLeave <= list.length ? list[mustLeave - 1] : undefined;
    if (oldest === undefined) return 1;
    return Math.max(1, Math.ceil((oldest + this.options.windowMs - this.now()) / 1000));
  }

  #sweep(): void {
    for (const key of [...this.#failures.keys()]) this.#recent(key);
    const trustedSince = this.now() - this.options.trustedForMs;
    for (const [key, at] of this.#trusted) if (at <= trustedSince) this.#trusted.delete(key);
  }
}
