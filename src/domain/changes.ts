// The catalogue of changes: everything in Portcullis that something else reacts to, in one list.
// Two kinds, one vocabulary:
// - events: a service says it on the typed bus (lib/events.ts) after its write; the reactions in
//   src/reactions/reactions.ts run in this process, in table order, and the emitter awaits them;
// - database changes: a row write that a database trigger (db/triggers.ts, each naming the changes
//   it reacts to) answers in the same transaction, whichever process or code path wrote it.
// Who reacts to each is the table in src/reactions/reactions.ts; docs/ARCHITECTURE.md ("Changes and
// reactions") says how to add a change, a reaction or a trigger. Values only: domain/ imports nothing.

/** Changes said on the event bus, with their arguments. */
export type ChangeEvents = {
  templateChanged: [templateId: string];
  certificateChanged: [certificateId: string];
  serverRenamed: [serverId: string];
  serverDeleting: [serverId: string];
  userStatusChanged: [userIds: readonly string[]];
  userClocksStarted: [userIds: readonly string[]];
};

export type EventChange = keyof ChangeEvents;

/** What each event means and who says it. */
export const EVENT_CHANGES: Record<EventChange, { says: string; by: string }> = {
  templateChanged: {
    says: "a template's definition changed: inbounds made from it get fresh links and are applied again",
    by: "features/templates (PUT)",
  },
  certificateChanged: {
    says: "a certificate's PEM pair changed (issuance, renewal, PUT): the inbounds using it follow",
    by: "features/certificates (PUT, ACME issuance and renewal)",
  },
  serverRenamed: {
    says: "a server's name or hostname changed: its share links say the new ones",
    by: "features/servers (PUT)",
  },
  serverDeleting: {
    says: "a server is about to be deleted: its inbounds come off its core first",
    by: "features/servers (DELETE)",
  },
  userStatusChanged: {
    says: "these users' status changed (empty: many, look at everyone); the admission trigger has marked their grants pending",
    by: "features/users (PUT, bulk actions, lifecycle tick), features/fairuse (a block or release)",
  },
  userClocksStarted: {
    says: "traffic was first counted for these on_hold users: their expiry clock started (they are active now)",
    by: "features/traffic (a collection from a core or a node agent's journal)",
  },
};

/** Row writes that database triggers react to (db/triggers.ts `changes`). */
export const DATABASE_CHANGES = {
  "user.created": "a user inserted",
  "user.deleted": "a user deleted",
  "user.renamed": "a user's name changed",
  "user.status": "a user's status changed (admin, bulk action, lifecycle: limited, expired, activated)",
  "user.lifecycle": "a user's limit, reset period, expiry or last reset changed, or used_bytes went down",
  "user.token": "a user's subscription token rotated",
  "user.announce": "a user's own Announce header changed",
  "user.device_limit": "a user's device limit changed (users.device_limit)",
  "user.fair_use_block":
    "a fair-use block started or ended (users.fair_use_blocked_until null ↔ a time; the fair-use job)",
  "grant.added": "a grant (user_access row) inserted",
  "grant.removed": "a grant deleted",
  "grant.changed": "a grant's user, inbound, credential or is_active changed",
  "inbound.changed": "an inbound's link parameters or is_active changed",
  "inbound.deleted": "an inbound deleted",
  "host.added": "a host added to an inbound",
  "host.changed": "a host changed (moved, reordered, edited)",
  "host.removed": "a host removed",
  "server.status": "a server's status changed (online, offline, error)",
  "server.left_out": "a server left out of /sub, or back in (the subscription-health job)",
  "settings.written": "the subscription settings written",
} as const;

export type DatabaseChange = keyof typeof DATABASE_CHANGES;
