// One typed way for a feature to tell the features above it that something changed, without
// importing them. The changes are catalogued in domain/changes.ts; who reacts to each is the table
// in src/reactions/reactions.ts, which deps.ts wires (wireReactions) once everything is built.
import type { ChangeEvents } from "../domain/changes.ts";

export type { ChangeEvents };

type Listener<Args extends unknown[]> = (...args: Args) => Promise<void>;

export class EventBus<Events extends { [name: string]: unknown[] }> {
  readonly #listeners: { [K in keyof Events]?: Listener<Events[K]>[] } = {};

  on<K extends keyof Events>(name: K, listener: Listener<Events[K]>): void {
    const listeners = this.#listeners[name] ?? [];
    listeners.push(listener);
    this.#listeners[name] = listeners;
  }

  /**
   * Runs the listeners one after another, in the order they were added, and resolves when all have
   * run. Every listener runs even when one fails; then the first failure is thrown.
   */
  /** How many listeners a change has (the reactions test compares this with the table). */
  listenerCount<K extends keyof Events>(name: K): number {
    return this.#listeners[name]?.length ?? 0;
  }

  async emit<K extends keyof Events>(name: K, ...args: Events[K]): Promise<void> {
    const failures: unknown[] = [];
    for (const listener of this.#listeners[name] ?? []) {
      await listener(...args).catch((error: unknown) => failures.push(error));
    }
    if (failures.length > 0) throw failures[0];
  }
}

export type Changes = EventBus<ChangeEvents>;
