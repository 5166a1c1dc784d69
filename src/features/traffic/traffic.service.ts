// Traffic collection: read a core's user and inbound counters with reset and journal them in the
// database (one row per server, TrafficRepository.journal), so a core restart loses at most what was
// counted since the last collection and a panel restart loses nothing that was journaled. Deltas whose
// journal write failed are kept in memory and added to the next collection. A read with reset is
// never abandoned at the ordinary core deadline (the core has reset its counters by then): the
// collection waits that long, and an answer that comes later is kept and journaled by the next
// collection (or by flush() at shutdown). fold() adds the journal to the totals (grants, users,
// inbounds, usage history) and deletes it, exactly once.
import type { Logger } from "pino";
import type { CoreClient } from "../../cores/core-client.ts";
import type { AgentLink } from "../../cores/core-transport.ts";
import type { CoreTraffic } from "../../cores/core-types.ts";
import { API_INBOUND_TAGS } from "../../cores/core-types.ts";
import { joinTraffic } from "../../cores/traffic-scan.ts";
import type { Changes } from "../../lib/events.ts";
import { type Limiter, limiter, settleAll } from "../../lib/limiter.ts";
import { settlesWithin } from "../../lib/settles-within.ts";
import type { ServersService } from "../servers/servers.service.ts";
import type { CoreSync } from "../sync/core-sync.ts";
import type { UsersService } from "../users/users.service.ts";
import { foldBatches } from "./fold-plan.ts";
import type { Folded, TrafficRepository } from "./traffic.repository.ts";
import type { UserUsage } from "./traffic.schemas.ts";
import { isEmpty, parseTraffic } from "./traffic.ts";

/** Per server: the users and inbounds with traffic in what was journaled (or, for an agent, counted). */
export type Collected = { users: number; inbounds: number };

type JournalAnswer = { epoch: string; batches: { seq: number; stats: [string, string][] }[] };

export class TrafficService {
  /** Per server: counted on the core (and reset there) but not written yet. */
  readonly #unwritten = new Map<string, CoreTraffic>();
  /** Per server: a read with reset whose answer has not come yet (one at a time per core). */
  readonly #reading = new Map<string, Promise<void>>();

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
    /**
     * How long a collection waits for a core's answer (the ordinary core deadline); a later answer
     * is kept for the next collection. The read's own deadline is longer (resetReadTimeoutMs).
     */
    private readonly answerWaitMs = 5000,
  ) {}

  /** One server's collection, journaled and folded into the totals before it returns. */
  async collect(serverId: string): Promise<Collected> {
    const [result] = await this.collectAll([serverId], limiter(1));
    if (result === undefined) throw new Error("no collection result");
    if (result.status === "rejected") throw result.reason;
    await this.fold();
    return result.value;
  }

  /**
   * Adds everything journaled so far to the totals, in transactions of whole servers' rows
   * (fold-plan.ts: about FOLD_BATCH_BYTES of journal text each, so no transaction holds the database
   * for long), and returns what it folded. Rows journaled meanwhile are left to the next fold. If a
   * batch fails, each of its rows is folded in a transaction of its own, so a row whose write keeps
   * failing holds back only its own bytes (it stays journaled, tried again next time). The failures
   * are logged; the fold returns what did go in. An aborted `signal` stops it between transactions.
   */
  async fold(options: { signal?: AbortSignal; batchBytes?: number } = {}): Promise<Folded> {
    const total: Folded = { rows: 0, users: 0, started: [] };
    const add = async (folded: Folded) => {
      total.rows += folded.rows;
      total.users += folded.users;
      total.started.push(...folded.started);
      if (folded.started.length > 0) await this.changes?.emit("userClocksStarted", folded.started);
    };
    const pending = await this.traffic.pending();
    const serverOf = new Map(pending.map((row) => [row.seq, row.serverId]));
    for (const rows of foldBatches(pending, options.batchBytes)) {
      if (options.signal?.aborted) break;
      try {
        await add(await this.traffic.fold({ rows }));
        continue;
      } catch (error) {
        this.logger.debug({ err: error }, "traffic journal not folded together; row by row");
      }
      for (const seq of rows) {
        try {
          await add(await this.traffic.fold({ only: seq }));
        } catch (error) {
          const serverId = serverOf.get(seq);
          this.logger.warn({ err: error, server_id: serverId, seq }, "traffic journal row not folded");
        }
      }
    }
    return total;
  }

  /**
   * One collection over several servers: every core is read with reset (`limit` at a time), then
   * what the direct cores counted is journaled in one transaction (TrafficRepository.journal: a few
   * inserts whatever the number of users). It is in the totals once fold() ran (the job folds right
   * after). If the journal write fails, every server's deltas are kept for the next collection.
   * Agents' journals are written per batch, straight into the totals (below).
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
    // Also what earlier answers left (late ones, failed writes), whoever holds those servers now:
    // only this instance has those bytes, and the core has already reset them.
    const asked = new Set(pending.map((index) => serverIds[index] as string));
    const others = [...this.#unwritten.keys()].filter((id) => !asked.has(id));
    if (asked.size === 0 && others.length === 0) return results;
    const written = await this.#writeAll([...asked, ...others]);
    pending.forEach((index, k) => {
      results[index] = written[k] as PromiseSettledResult<Collected>;
    });
    written.slice(asked.size).forEach((result, k) => {
      if (result.status === "rejected") {
        this.logger.warn({ server_id: others[k], err: result.reason }, "late traffic not journaled yet");
      }
    });
    return results;
  }

  /**
   * Reads a core's counters with reset into what is not written yet. Undefined: there is something
   * to write; a result: the server is done (nothing counted, or an agent's journal written already).
   * A core whose previous answer is still on its way is not read again (its counters keep counting).
   */
  async #read(serverId: string): Promise<Collected | undefined> {
    if (this.#reading.has(serverId)) return this.#pendingOf(serverId);
    const { client } = await this.sync.connect(serverId);
    const agent = client.agentLink?.() ?? null;
    if (agent !== null) return this.#collectJournal(serverId, agent);
    const reading = this.#readWithReset(serverId, client);
    if (!(await settlesWithin(reading, this.answerWaitMs))) {
      this.logger.warn(
        { server_id: serverId, wait_ms: this.answerWaitMs },
        "traffic answer late: kept for the next collection when it comes",
      );
      return this.#pendingOf(serverId);
    }
    await reading; // its failure, if it failed
    return this.#pendingOf(serverId);
  }

  /** The read goes on past a collection that stopped waiting; its answer is kept when it comes. */
  #readWithReset(serverId: string, client: CoreClient): Promise<void> {
    // Summed in place from the answers' bytes (cores/traffic-scan.ts): at a million users this is
    // the poll's CPU, so no message, string or bigint per counter.
    const reading = client
      .queryTraffic(true)
      .then((polled) => this.#keep(serverId, polled))
      .finally(() => this.#reading.delete(serverId));
    this.#reading.set(serverId, reading);
    // A read nobody waits for any more still reports its failure (and is never an unhandled one).
    reading.catch((error: unknown) =>
      this.logger.debug({ server_id: serverId, err: error }, "traffic read with reset failed"),
    );
    return reading;
  }

  /** Undefined: this server has bytes to journal; otherwise nothing to do. */
  #pendingOf(serverId: string): Collected | undefined {
    return this.#unwritten.has(serverId) ? undefined : { users: 0, inbounds: 0 };
  }

  /** Adds counters read (and reset) on a core to what is not written yet for it. */
  #keep(serverId: string, traffic: CoreTraffic): void {
    const carried = this.#unwritten.get(serverId);
    const all = carried === undefined ? traffic : joinTraffic(carried, traffic);
    if (!isEmpty(all)) this.#unwritten.set(serverId, all);
  }

  /**
   * Journals what is not written yet for these servers, taken out of memory first: an answer that
   * comes during the write is kept apart (never deleted with what was written, never written twice).
   * A failed write puts the bytes back for the next collection.
   */
  async #writeAll(serverIds: readonly string[]): Promise<PromiseSettledResult<Collected>[]> {
    const parts = serverIds.map((serverId) => ({ serverId, traffic: this.#take(serverId) }));
    const taken = parts.flatMap(({ serverId, traffic }) =>
      traffic === undefined ? [] : [{ serverId, traffic }],
    );
    try {
      if (taken.length > 0) await this.traffic.journal(taken, this.now());
    } catch (reason) {
      for (const { serverId, traffic } of taken) this.#keep(serverId, traffic);
      return parts.map(() => ({ status: "rejected", reason }));
    }
    return parts.map(({ serverId, traffic }) => ({
      status: "fulfilled",
      value: traffic === undefined ? { users: 0, inbounds: 0 } : this.#written(serverId, traffic),
    }));
  }

  #take(serverId: string): CoreTraffic | undefined {
    const traffic = this.#unwritten.get(serverId);
    this.#unwritten.delete(serverId);
    return traffic;
  }

  /**
   * A server's counters are in the database (journaled). `users` counts the journaled user entries
   * (a user carried over from a failed write and read again counts twice).
   */
  #written(serverId: string, traffic: CoreTraffic): Collected {
    const value = { users: traffic.users.count, inbounds: traffic.inbounds.size };
    this.logger.debug({ server_id: serverId, ...value }, "traffic collected");
    return value;
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
   * On shutdown: journal what was read (and reset) on cores but not written yet, after waiting (at
   * most `waitMs`) for answers still on their way; the next fold, by this instance after a restart or
   * by another, counts it. What the cores still count needs nothing: the next collection reads it.
   * Returns the servers journaled.
   */
  async flush(waitMs = this.answerWaitMs): Promise<number> {
    const late = [...this.#reading.values()];
    if (late.length > 0 && !(await settlesWithin(Promise.allSettled(late), waitMs))) {
      this.logger.warn({ reads: this.#reading.size }, "traffic answers still on their way at shutdown: lost");
    }
    const written = await this.#writeAll([...this.#unwritten.keys()]);
    for (const result of written) if (result.status === "rejected") throw result.reason;
    return written.length;
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
