// The home page's numbers: the servers and the users per status from two queries, and for the node
// servers their agents' reports and online addresses, asked for in parallel. An agent that does not
// answer within AGENT_DEADLINE_MS is shown unreachable; the overview never waits on the slowest.
import { USER_STATUSES, type UserStatus } from "../../domain/users.ts";
import type { NodesService } from "../nodes/nodes.service.ts";
import type { OverviewRepository } from "./overview.repository.ts";
import type { Overview, OverviewAgent } from "./overview.schemas.ts";

/** How long the overview waits for any one agent (its report and its online addresses). */
export const AGENT_DEADLINE_MS = 3_000;
/** The agents' online window (src/node/connections.ts). */
const ONLINE_WINDOW_MINUTES = 5;

type AgentReport = {
  agent_version?: string;
  agent_uptime_seconds?: number;
  core?: {
    flavor?: "xray" | "v2ray" | null;
    version?: string | null;
    running?: boolean;
    uptime_seconds?: number | null;
    restarts?: number;
  };
  certificate?: { not_after?: string };
};

const UNREACHABLE: OverviewAgent = {
  reachable: false,
  agent_version: null,
  agent_uptime_seconds: null,
  core_flavor: null,
  core_version: null,
  core_running: null,
  core_uptime_seconds: null,
  restarts: null,
  certificate_not_after: null,
};

export class OverviewService {
  constructor(
    private readonly overview: OverviewRepository,
    private readonly nodes: NodesService,
    private readonly now: () => Date = () => new Date(),
    private readonly deadlineMs = AGENT_DEADLINE_MS,
  ) {}

  /**
   * `ownerId`: an admin whose users.read scope is own sees their own users' numbers only (per status,
   * online); the servers are the role's to see as before (docs/RESELLERS.md).
   */
  async get(ownerId?: string): Promise<Overview> {
    const [servers, counts] = await Promise.all([
      this.overview.servers(),
      this.overview.usersByStatus(ownerId),
    ]);
    const nodeIds = servers.filter((s) => s.connection === "node").map((s) => s.id);
    const [agents, online] = await Promise.all([
      Promise.all(nodeIds.map(async (id) => [id, await this.agentOf(id)] as const)),
      this.online(nodeIds, ownerId),
    ]);
    const byId = new Map(agents);
    const byStatus = Object.fromEntries(USER_STATUSES.map((s) => [s, counts.get(s) ?? 0])) as Record<
      UserStatus,
      number
    >;
    return {
      servers: servers.map((server) => ({ ...server, agent: byId.get(server.id) ?? null })),
      users: { total: [...counts.values()].reduce((a, b) => a + b, 0), by_status: byStatus },
      online,
      generated_at: this.now().toISOString(),
    };
  }

  private async agentOf(serverId: string): Promise<OverviewAgent> {
    const report = await within(this.deadlineMs, this.nodes.agentStatus(serverId) as Promise<AgentReport>);
    if (report === undefined) return UNREACHABLE;
    const core = report.core ?? {};
    return {
      reachable: true,
      agent_version: report.agent_version ?? null,
      agent_uptime_seconds: report.agent_uptime_seconds ?? null,
      core_flavor: core.flavor ?? null,
      core_version: core.version ?? null,
      core_running: core.running ?? null,
      core_uptime_seconds: core.uptime_seconds ?? null,
      restarts: core.restarts ?? null,
      certificate_not_after: report.certificate?.not_after ?? null,
    };
  }

  private async online(nodeIds: string[], ownerId?: string): Promise<Overview["online"]> {
    const users = new Set<string>();
    const addresses = new Set<string>();
    const unreachable: string[] = [];
    const seen: { key: string; userId: string | null; ips: string[] }[] = [];
    await Promise.all(
      nodeIds.map(async (serverId) => {
        const answer = await within(this.deadlineMs, this.nodes.serverOnline(serverId));
        if (answer === undefined) {
          unreachable.push(serverId);
          return;
        }
        for (const user of answer.users) {
          if (user.addresses.length === 0) continue;
          // An email the panel does not know (a user made on the core by hand) still counts once.
          const key = user.user_id ?? `${serverId}/${user.email}`;
          seen.push({ key, userId: user.user_id ?? null, ips: user.addresses.map((a) => a.ip) });
        }
      }),
    );
    // An own-scoped admin counts their own users only (a user the panel does not know is nobody's).
    const owned =
      ownerId === undefined
        ? undefined
        : await this.overview.ownedAmong(
            [...new Set(seen.flatMap((s) => (s.userId === null ? [] : [s.userId])))],
            ownerId,
          );
    for (const { key, userId, ips } of seen) {
      if (owned !== undefined && (userId === null || !owned.has(userId))) continue;
      users.add(key);
      for (const ip of ips) addresses.add(ip);
    }
    return {
      users: users.size,
      addresses: addresses.size,
      window_minutes: ONLINE_WINDOW_MINUTES,
      unreachable_server_ids: unreachable.sort(),
    };
  }
}

/** The promise's value, or undefined when it fails or takes longer than `ms`. */
async function within<T>(ms: number, promise: Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise.catch(() => undefined), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
