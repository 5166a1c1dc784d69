// Traffic collection: read a core's user and inbound counters with reset and add them to the totals
// in the database, so a core restart loses at most what was counted since the last collection.
// Deltas whose write failed are kept in memory and added to the next collection.
import type { Logger } from "pino";
import type { AgentLink } from "../../cores/core-transport.ts";
import { API_INBOUND_TAGS } from "../../cores/core-types.ts";
import type { Changes } from "../../lib/events.ts";
import type { ServersService } from "../servers/servers.service.ts";
import type { CoreSync } from "../sync/core-sync.ts";
import type { UsersService } from "../users/users.service.ts";
import type { TrafficRepository } from "./traffic.repository.ts";
import type { UserUsage } from "./traffic.schemas.ts";
import { isEmpty, mergeTraffic, parseTraffic, type TrafficDeltas } from "./traffic.ts";

export type Collected = { users: number; inbounds: number };

type JournalAnswer = { epoch: string; batches: { seq: number; stats: [string, string][] }[] };

export class TrafficService {
  /** Per server: counted on the core (and reset there) but not written yet. */
  readonly #unwritten = new Map<string, TrafficDeltas>();

  constructor(
    private readonly traffic: TrafficRepository,
    private readonly sync: CoreSync,
    private readonly servers: ServersService,
    private readonly users: UsersService,
    private readonly logger: Logger,
    /** When bytes are written: the usage history's buckets and online_at follow it (tests move it). */
    private readonly now: () => Date,
    /** userClocksStarted: on_hold users whose expiry clock this collection started (user.activated follows). */
    private readonly changes?: Changes,
  ) {}

  async collect(serverId: string): Promise<Collected> {
    const { client } = await this.sync.connect(serverId);
    const agent = client.agentLink?.() ?? null;
    if (agent !== null) return this.#collectJournal(serverId, agent);
    const stats = [
      ...(await client.queryStats("user>>>", true)),
      ...(await client.queryStats("inbound>>>", true)),
    ];
    const deltas = parseTraffic(stats, API_INBOUND_TAGS);
    const carried = this.#unwritten.get(serverId);
    const all = carried === undefined ? deltas : mergeTraffic(carried, deltas);
    if (isEmpty(all)) return { users: 0, inbounds: 0 };
    this.#unwritten.set(serverId, all);
    const started: string[] = [];
    const users = await this.traffic.addTraffic(serverId, all, { now: this.now(), started });
    this.#unwritten.delete(serverId);
    if (started.length > 0) await this.changes?.emit("userClocksStarted", started);
    this.logger.debug({ server_id: serverId, users, inbounds: all.inbounds.size }, "traffic collected");
    return { users, inbounds: all.inbounds.size };
  }

  /**
   * A node agent keeps what it read in a journal of numbered batches (node/traffic-journal.ts): each
   * is counted once per (server, epoch, sequence), in the transaction that counts it, and the agent
   * deletes them when acknowledged. A batch delivered again (the acknowledgement was lost, the panel
   * restarted) is recognised and skipped, so nothing is counted twice or lost.
   */
  async #collectJournal(serverId: string, agent: AgentLink): Promise<Collected> {
    const { epoch, batches } = await agent.json<JournalAnswer>("POST", "traffic");
    let users = 0;
    let inbounds = 0;
    for (const batch of batches) {
      const stats = batch.stats.map(([name, value]) => ({ name, value: BigInt(value) }));
      const deltas = parseTraffic(stats, API_INBOUND_TAGS);
      const started: string[] = [];
      users += await this.traffic.addTraffic(serverId, deltas, {
        now: this.now(),
        started,
        receipt: { epoch, seq: batch.seq },
      });
      inbounds += deltas.inbounds.size;
      if (started.length > 0) await this.changes?.emit("userClocksStarted", started);
    }
    const last = batches.at(-1);
    if (last !== undefined) await agent.json("POST", "traffic-ack", { epoch, seq: last.seq });
    return { users, inbounds };
  }

  /**
   * On shutdown: write what was read (and reset) on cores but not written yet. What the cores still
   * count needs nothing: the next collection, by this instance or another, reads it.
   */
  async flush(): Promise<number> {
    let written = 0;
    for (const [serverId, deltas] of this.#unwritten) {
      await this.traffic.addTraffic(serverId, deltas, { now: this.now() });
      this.#unwritten.delete(serverId);
      written += 1;
    }
    return written;
  }

  /** A server this instance no longer collects for: what it could not write is dropped with it. */
  forget(serverId: string): void {
    this.#unwritten.delete(serverId);
  }

  async usage(userId: string): Promise<UserUsage> {
    await this.users.get(userId);
    const servers = await this.traffic.usageOfUser(userId);
    return {
      user_id: userId,
      uplink_bytes: servers.reduce((sum, s) => sum + s.uplink_bytes, 0),
      downlink_bytes: servers.reduce((sum, s) => sum + s.downlink_bytes, 0),
      servers,
    };
  }

  listServerIds(): Promise<string[]> {
    return this.servers.list().then((servers) => servers.map((server) => server.id));
  }
}
