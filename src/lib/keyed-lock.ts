// Runs tasks one at a time per key (e.g. per inbound), in this process. Two grants racing for the
// one seat of a V2Ray shadowsocks inbound, or an apply racing a grant, would otherwise interleave
// their checks and core calls.
export class KeyedLock {
  readonly #tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const result = previous.then(task, task);
    const tail = result.catch(() => undefined);
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }
}
