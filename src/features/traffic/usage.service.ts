// The usage history for charts: a user's buckets, every server's buckets, and pruning what is past
// its retention. The writes happen with the traffic totals (TrafficRepository.addTraffic).
import type { ServersService } from "../servers/servers.service.ts";
import type { UsersService } from "../users/users.service.ts";
import type { FleetUsage, FleetUsageQuery, UserUsageSeries } from "./traffic.schemas.ts";
import type { UsageRepository } from "./usage.repository.ts";
import { denseSeries, type Granularity, parseRange, pruneCutoffs, sumBuckets } from "./usage.ts";

export class UsageService {
  constructor(
    private readonly usage: UsageRepository,
    private readonly users: UsersService,
    private readonly servers: ServersService,
    private readonly now: () => Date,
  ) {}

  async userSeries(
    userId: string,
    query: { from: string; to: string; granularity: Granularity },
  ): Promise<UserUsageSeries> {
    const range = parseRange(query);
    await this.users.get(userId);
    const stored = await this.usage.listUserBuckets(userId, range.granularity, range.from, range.to);
    const buckets = denseSeries(range, stored);
    return { user_id: userId, ...rangeOut(range), ...sumBuckets(buckets), buckets };
  }

  /**
   * Every server (or the one asked for), with its buckets; servers without traffic show zeros.
   * `ownerId`: only that admin's users' traffic (an admin whose users.read scope is own).
   */
  async fleet(query: FleetUsageQuery, ownerId?: string): Promise<FleetUsage> {
    const range = parseRange(query);
    const servers =
      query.server_id === undefined ? await this.servers.list() : [await this.servers.get(query.server_id)];
    const stored =
      ownerId === undefined
        ? await this.usage.listServerBuckets(range.granularity, range.from, range.to, query.server_id)
        : await this.usage.listOwnedServerBuckets(
            ownerId,
            range.granularity,
            range.from,
            range.to,
            query.server_id,
          );
    const byServer = new Map<string, typeof stored>();
    for (const row of stored) {
      const rows = byServer.get(row.serverId);
      if (rows === undefined) byServer.set(row.serverId, [row]);
      else rows.push(row);
    }
    const out = servers.map((server) => {
      const buckets = denseSeries(range, byServer.get(server.id) ?? []);
      return { server_id: server.id, server_name: server.name, ...sumBuckets(buckets), buckets };
    });
    const uplink = out.reduce((sum, s) => sum + s.uplink_bytes, 0);
    const downlink = out.reduce((sum, s) => sum + s.downlink_bytes, 0);
    return { ...rangeOut(range), uplink_bytes: uplink, downlink_bytes: downlink, servers: out };
  }

  /** Hourly buckets older than 7 days and daily ones older than 13 months go. */
  prune(): Promise<{ hourly: number; daily: number }> {
    return this.usage.prune(pruneCutoffs(this.now()));
  }
}

function rangeOut(range: { from: Date; to: Date; granularity: Granularity }) {
  return { granularity: range.granularity, from: range.from.toISOString(), to: range.to.toISOString() };
}
