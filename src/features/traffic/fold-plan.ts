// Which journal rows go into which fold transaction (pure). A fold takes everything journaled so far,
// but not in one transaction: one that writes a million users holds SQLite's one connection (and on
// PostgreSQL row locks) for minutes, and every API write waits behind it. So the rows are split by
// server, all of a server's rows in the same transaction (its polls merged: each user written once
// per hour bucket however many polls it folds), servers added until about FOLD_BATCH_BYTES of
// journal text per poll, i.e. about that many users' items (~50 bytes each). A server's weight is its
// largest row: its rows are polls of mostly the same users, so their union is about the largest.

/** A journal row not folded yet: its sequence, server and the size of its deltas' text. */
export type PendingRow = { seq: number; serverId: string; bytes: number };

/** Journal text per fold transaction (one poll's worth per server): about 20,000 users' items. */
export const FOLD_BATCH_BYTES = 1_000_000;

/** The rows' sequences in batches, one per transaction: whole servers, oldest server first. */
export function foldBatches(pending: readonly PendingRow[], budgetBytes = FOLD_BATCH_BYTES): number[][] {
  const servers = new Map<string, { seqs: number[]; bytes: number }>();
  for (const row of pending) {
    let server = servers.get(row.serverId);
    if (server === undefined) {
      server = { seqs: [], bytes: 0 };
      servers.set(row.serverId, server);
    }
    server.seqs.push(row.seq);
    server.bytes = Math.max(server.bytes, row.bytes);
  }
  const batches: number[][] = [];
  let batch: number[] = [];
  let weight = 0;
  for (const server of servers.values()) {
    if (batch.length > 0 && weight + server.bytes > budgetBytes) {
      batches.push(batch);
      batch = [];
      weight = 0;
    }
    batch.push(...server.seqs);
    weight += server.bytes;
  }
  if (batch.length > 0) batches.push(batch);
  return batches.map((seqs) => seqs.sort((a, b) => a - b));
}
