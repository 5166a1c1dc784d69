// The words of sync (docs/ARCHITECTURE.md, glossary), defined once for the table types, the API
// schemas and the code that decides: values only, domain/ imports nothing.

/** Where a row stands with its core: the outcome of the last push, or waiting for the reconciler. */
export const SYNC_STATES = ["pending", "synced", "error"] as const;
export type SyncState = (typeof SYNC_STATES)[number];

/** What the reconciler last saw of a server's core (`unknown` until it has looked). */
export const SERVER_STATUSES = ["online", "offline", "error", "unknown"] as const;
export type ServerStatus = (typeof SERVER_STATUSES)[number];
