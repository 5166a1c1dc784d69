// One typed way for a feature to tell the features above it that something changed, without
// importing them: templates, certificates and servers emit; deps.ts wires the listeners (inbounds,
// the subscription cache, provisioning) once, after everything is built.

/** What can change, with its arguments. */
export type ChangeEvents = {
  /** A template's definition changed: inbounds made from it get fresh links and are applied again. */
  templateChanged: [templateId: string];
  /** A certificate's PEM pair changed (issuance, renewal, PUT): the inbounds using it follow. */
  certificateChanged: [certificateId: string];
  /** A server's name or hostname changed: its share links say the new ones. */
  serverRenamed: [serverId: string];
  /** A server is about to be deleted: its inbounds come off its core first. */
  serverDeleting: [serverId: string];
  /**
   * These users' status changed (admin write, lifecycle tick, bulk action): provisioning adds or
   * removes their credentials on the cores at once instead of at the next reconcile; empty = "many,
   * look at everyone".
   */
  userStatusChanged: [userIds: readonly string[]];
};

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
  async emit<K extends keyof Events>(name: K, ...args: Events[K]): Promise<void> {
    const failures: unknown[] = [];
    for (const listener of this.#listeners[name] ?? []) {
      await listener(...args).catch((error: unknown) => failures.push(error));
    }
    if (failures.length > 0) throw failures[0];
  }
}

export type Changes = EventBus<ChangeEvents>;
