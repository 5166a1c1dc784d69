// What a core counted for one user, read WITHOUT reset, to compare with what the panel collected:
// the figure a test expects the user's usage to equal exactly.
import type { CoreClient } from "../../src/cores/core-client.ts";
import { waitFor } from "./poll.ts";

export type UserBytes = { uplink_bytes: number; downlink_bytes: number };

/**
 * The user's counters once two reads in a row agree (a client's connection may still be closing)
 * and at least `atLeastDownlink` bytes went down.
 */
export async function settledUserBytes(
  client: Pick<CoreClient, "queryStats">,
  email: string,
  atLeastDownlink: number,
): Promise<UserBytes> {
  const read = async (): Promise<UserBytes> => {
    const stats = await client.queryStats(`user>>>${email}>>>`, false);
    const value = (direction: string) =>
      Number(stats.find((s) => s.name.endsWith(`>>>${direction}`))?.value ?? 0n);
    return { uplink_bytes: value("uplink"), downlink_bytes: value("downlink") };
  };
  let last = await read();
  return waitFor(
    async () => {
      const now = await read();
      const same = now.uplink_bytes === last.uplink_bytes && now.downlink_bytes === last.downlink_bytes;
      last = now;
      return same && now.downlink_bytes >= atLeastDownlink && now;
    },
    { timeoutMs: 10_000, intervalMs: 200, what: "the core's counters to settle" },
  );
}
