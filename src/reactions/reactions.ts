// The change → reactions table: for every change of the catalogue (domain/changes.ts), who reacts
// and how, in one place. Three channels, all declared here or pointed to from here:
// - EVENT_REACTIONS: in-process reactions to an event, wired on the bus by wireReactions() (deps.ts
//   calls it; it wires nothing by hand). They run in table order; the emitting service awaits them.
// - database reactions: the triggers of db/triggers.ts, each naming the database changes it answers;
//   databaseReactions() lists them by change, so one table answers "what happens when X changes".
// - READ_YOUR_WRITES: which API writes answer only after this instance's subscription cache caught up
//   with the change feed their transaction wrote (so the next GET /sub shows the write); app.ts
//   attaches that reaction to exactly these routes, and every other write route is listed as not
//   changing what /sub shows. A write route in neither list fails src/reactions/reactions.test.ts.
import type { Logger } from "pino";
import { TRIGGERS } from "../db/triggers.ts";
import {
  type ChangeEvents,
  DATABASE_CHANGES,
  type DatabaseChange,
  type EventChange,
} from "../domain/changes.ts";
import type { InboundsService } from "../features/inbounds/inbounds.service.ts";
import type { SubscriptionsService } from "../features/subscriptions/subscriptions.service.ts";
import type { CoreSync } from "../features/sync/core-sync.ts";
import type { Reconciler } from "../features/sync/reconciler.ts";
import type { LifecycleService } from "../features/users/lifecycle.service.ts";
import type { Changes } from "../lib/events.ts";

/** What the reactions reach: built by deps.ts before wireReactions() runs. */
export type Reactors = {
  inbounds: InboundsService;
  subscriptions: SubscriptionsService;
  reconciler: Reconciler;
  sync: CoreSync;
  lifecycle: LifecycleService;
  logger: Logger;
};

export type EventReaction<K extends EventChange = EventChange> = {
  change: K;
  /** Who reacts (a feature or job), and what it does, for the docs and the trace. */
  by: string;
  does: string;
  run: (reactors: Reactors, ...args: ChangeEvents[K]) => Promise<void>;
};

const on = <K extends EventChange>(row: EventReaction<K>) => row as unknown as EventReaction;

export const EVENT_REACTIONS: readonly EventReaction[] = [
  on({
    change: "templateChanged",
    by: "inbounds",
    does: "the inbounds made from the template are rebuilt and applied to their cores",
    run: (r, id) => r.inbounds.refreshUsing("template_id", id),
  }),
  on({
    change: "certificateChanged",
    by: "inbounds",
    does: "the inbounds using the certificate get its new PEM pair on their cores",
    run: (r, id) => r.inbounds.refreshUsing("certificate_id", id),
  }),
  on({
    // After the inbounds above: a renewal in the background answers no API request to catch up.
    change: "certificateChanged",
    by: "subscriptions",
    does: "this instance's subscription cache catches up with the link parameters just written",
    run: (r) => r.subscriptions.catchUp(),
  }),
  on({
    change: "serverRenamed",
    by: "inbounds",
    does: "the server's inbounds get share links with the new name and hostname",
    run: (r, id) => r.inbounds.refreshServer(id),
  }),
  on({
    // The users' grants were marked pending by the admission trigger (db/triggers.ts).
    change: "userStatusChanged",
    by: "sync (reconciler)",
    does: "the reconcile job ticks now: credentials of newly admitted users are added, others removed",
    run: async (r) => r.reconciler.wake(),
  }),
  on({
    change: "userClocksStarted",
    by: "users (lifecycle)",
    does: "user.activated is sent for each user (notifications, webhooks)",
    run: (r, ids) => r.lifecycle.clocksStarted(ids),
  }),
  on({
    change: "serverDeleting",
    by: "sync",
    does: "the server's inbounds are removed from its core (a failure is logged, the delete goes on)",
    run: (r, id) =>
      r.sync.removeServerInbounds(id).catch((error: unknown) => {
        r.logger.warn(
          { server_id: id, err: error },
          "inbounds of a deleted server not removed from its core",
        );
      }),
  }),
];

/** Subscribes every reaction of the table to its change, in table order. */
export function wireReactions(bus: Changes, reactors: Reactors): void {
  for (const reaction of EVENT_REACTIONS) {
    bus.on(reaction.change, (...args) => reaction.run(reactors, ...args));
  }
}

/** The triggers answering each database change, from their declarations. */
export function databaseReactions(): Map<DatabaseChange, string[]> {
  const out = new Map<DatabaseChange, string[]>();
  for (const change of Object.keys(DATABASE_CHANGES) as DatabaseChange[]) out.set(change, []);
  for (const trigger of TRIGGERS) {
    for (const change of trigger.changes) out.get(change)?.push(`${trigger.name}: ${trigger.purpose}`);
  }
  return out;
}

/**
 * Read-your-writes: the write routes (by URL prefix, every method but GET/HEAD/OPTIONS) whose change
 * can alter what GET /sub shows. Their answer leaves only after subscriptions.catchUp(): the triggers
 * wrote the change feed in the write's transaction, the cache drops what it names.
 */
export const READ_YOUR_WRITES: readonly string[] = [
  "/api/users", // users, their status, limits, token, announce, grants by user, bulk actions
  "/api/servers", // rename, delete, tests (status), inbounds, their hosts and grants (nested)
  "/api/templates", // an inbound's links follow its template
  "/api/certificates", // an inbound's links follow its certificate
  "/api/subscription-settings",
  "/api/groups", // a group's inbounds and members are its members' grants
  "/api/plans", // unclassified when added (they waited as every unlisted write does): kept waiting
];

/** Write routes that change nothing GET /sub shows: their answers do not wait for the cache. */
export const NOT_SUBSCRIPTION_WRITES: readonly string[] = [
  "/api/auth", // sign-in, tokens, own password and 2FA
  "/api/api-keys",
  "/api/admins",
  "/api/webhooks",
  "/api/node-join", // a node agent joining (its server's status changes later, through the feed)
  "/api/fair-use", // the fair-use settings: the job reads them; a block does not change /sub
  "/api/import", // an upload, or a job's start (202): the import itself writes in the background
];

const under = (url: string, prefix: string) => url === prefix || url.startsWith(`${prefix}/`);

/**
 * Whether a write route waits for the subscription cache: yes for READ_YOUR_WRITES, no for
 * NOT_SUBSCRIPTION_WRITES; a route in neither waits too (the safe side) and the reactions test names it.
 */
export function readsItsWrites(url: string): boolean {
  return !NOT_SUBSCRIPTION_WRITES.some((prefix) => under(url, prefix));
}

/** A write route's place in the table, or undefined when it is in neither list. */
export function classifyWrite(url: string): "read-your-writes" | "no subscription change" | undefined {
  if (READ_YOUR_WRITES.some((prefix) => under(url, prefix))) return "read-your-writes";
  if (NOT_SUBSCRIPTION_WRITES.some((prefix) => under(url, prefix))) return "no subscription change";
  return undefined;
}
