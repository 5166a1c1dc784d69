// Traffic collection: read a core's user and inbound counters with reset and add them to the totals
// in the database, so a core restart loses at most what was counted since the last collection.
// Deltas whose write failed are kept in memory and added to the next collection.
import type { Logger } from "pino";
import type { AgentLink } from "../../cores/core-transport.ts";
import { API_INBOUND_TAGS } from "../../cores/core-types.ts";
import type { Changes } from "../../lib/events.ts";
import { type Limiter, limiter, settleAll } from "../../lib/limiter.ts";
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
    const [result] = await this.collectAll([serverId], limiter(1));
    if (result === undefined) throw new Error("no collection result");
    if (result.status === "rejected") throw result.reason;
    return result.value;
  }

  /**
   * One collection over several servers: every core is read with reset (`limit` at a time), then
   * what the direct cores counted is written in one transaction (TrafficRepository.addTrafficMany:
   * a user with traffic on several servers is written once, each page once). If that write fails,
   * each server's deltas are written in a transaction of their own, so a server whose write keeps
   * failing holds back only its own deltas. Agents' journals are written per batch (below).
   */
  async collectAll(
    serverIds: readonly string[],
    limit: Limiter,
    /** Asked again just before each server is read (the job: is its lease still held). */
    stillWanted: (serverId: string) => boolean = () => true,
  ): Promise<PromiseSettledResult<Collected>[]> {
    const reads = await settleAll(serverIds, limit, (serverId) =>
      stillWanted(serverId) ? this.#read(serverId) : Promise.resolve({ users: 0, inbounds: 0 }),
    );
    const pending: number[] = [];
    const results = reads.map((read, index): PromiseSettledResult<Collected> => {
      if (read.status === "rejected") return read;
      if (read.value !== undefined) return { status: "fulfilled", value: read.value };
      pending.push(index);
      return { status: "fulfilled", value: { users: 0, inbounds: 0 } };
    });
    if (pending.length === 0) return results;
    const written = await this.#writeAll(pending.map((index) => serverIds[index] as string));
    pending.forEach((index, k) => {
      results[index] = written[k] as PromiseSettledResult<Collected>;
    });
    return results;
  }

  /**
   * Reads a core's counters with reset into what is not written yet. Undefined: there is something
   * to write; a result: the server is done (nothing counted, or an agent's journal written already).
   */
  async #read(serverId: string): Promise<Collected | undefined> {
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
    return undefined;
  }

  async #writeAll(serverIds: readonly string[]): Promise<PromiseSettledResult<Collected>[]> {
    const parts = serverIds.map((serverId) => ({ serverId, deltas: this.#deltasOf(serverId) }));
    const started: string[] = [];
    let users: number[];
    try {
      users = await this.traffic.addTrafficMany(parts, { now: this.now(), started });
    } catch (error) {
      if (parts.length === 1) return [{ status: "rejected", reason: error }];
      this.logger.debug({ err: error, servers: parts.length }, "traffic not written together; per server");
      const results: PromiseSettledResult<Collected>[] = [];
      for (const part of parts) {
        try {
          results.push({ status: "fulfilled", value: await this.#writeOne(part.serverId, part.deltas) });
        } catch (reason) {
          results.push({ status: "rejected", reason });
        }
      }
      return results;
    }
    const values = parts.map(({ serverId, deltas }, k) => this.#written(serverId, deltas, users[k] ?? 0));
    if (started.length > 0) await this.changes?.emit("userClocksStarted", started);
    return values.map((value) => ({ status: "fulfilled", value }));
  }

  async #writeOne(serverId: string, deltas: TrafficDeltas): Promise<Collected> {
    const started: string[] = [];
    const users = await this.traffic.addTraffic(serverId, deltas, { now: this.now(), started });
    const value = this.#written(serverId, deltas, users);
    if (started.length > 0) await this.changes?.emit("userClocksStarted", started);
    return value;
  }

  /** A server's deltas are in the database: no longer held for the next collection. */
  #written(serverId: string, deltas: TrafficDeltas, users: number): Collected {
    this.#unwritten.delete(serverId);
    const value = { users, inbounds: deltas.inbounds.size };
    this.logger.debug({ server_id: serverId, ...value }, "traffic collected");
    return value;
  }

  #deltasOf(serverId: string): TrafficDeltas {
    const deltas = this.#unwritten.get(serverId);
    if (deltas === undefined) throw new Error(`no unwritten traffic for server ${serverId}`);
    return deltas;
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
