// Prometheus metrics (prom-client, a registry of our own): HTTP requests by route and status with
// latency, the subscription fast path and cache, reconcile runs and lag, cores up or down, grants
// per sync state, traffic collected, lifecycle transitions, webhook deliveries, and Node's own
// (event-loop lag, memory, GC: only when /metrics is on, since the lag monitor is a 10 ms timer that
// wakes an idle service 100 times a second). Counters are moved by the code that does the work
// (`record*`); gauges over the database are read once per scrape (two small grouped queries).
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { MetricsRepository, ServerHealth } from "./metrics.repository.ts";

/** What the subscription cache reports (SubscriptionsService: given as it is). */
export type CacheStats = {
  entries: number;
  bytes: number;
  budgetBytes: number;
  hits: number;
  misses: number;
  notStored: number;
};
export type CacheStatsSource = { stats(): CacheStats };

export class MetricsService {
  readonly registry = new Registry();
  readonly #http: Counter<"method" | "route" | "status">;
  readonly #httpSeconds: Histogram<"method" | "route">;
  readonly #reconciles: Counter<"server" | "outcome">;
  readonly #trafficBytes: Counter<"direction">;
  readonly #transitions: Counter<"to">;
  readonly #deliveries: Counter<"outcome">;
  /** The database's answer for the scrape in progress, shared by the gauges that read it. */
  #snapshot: Promise<{ servers: ServerHealth[]; grants: Map<string, number> }> | undefined;
  private readonly now: () => number;

  constructor(
    private readonly repo: MetricsRepository,
    cacheStats: CacheStatsSource,
    options: { processMetrics: boolean; now?: () => number },
  ) {
    this.now = options.now ?? Date.now;
    const registers = [this.registry];
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry, prefix: "portcullis_" });
    this.#http = new Counter({
      name: "portcullis_http_requests_total",
      help: "HTTP requests answered through the router, by route pattern and status",
      labelNames: ["method", "route", "status"],
      registers,
    });
    this.#httpSeconds = new Histogram({
      name: "portcullis_http_request_duration_seconds",
      help: "Time to answer an HTTP request, by route pattern",
      labelNames: ["method", "route"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.#reconciles = new Counter({
      name: "portcullis_reconcile_runs_total",
      help: "Reconcile ticks finished, by server and outcome (ok, failed)",
      labelNames: ["server", "outcome"],
      registers,
    });
    this.#trafficBytes = new Counter({
      name: "portcullis_traffic_collected_bytes_total",
      help: "Bytes read from the cores' traffic counters, by direction (uplink, downlink)",
      labelNames: ["direction"],
      registers,
    });
    this.#transitions = new Counter({
      name: "portcullis_user_status_transitions_total",
      help: "Users moved to a lifecycle status by the lifecycle job or an admin",
      labelNames: ["to"],
      registers,
    });
    this.#deliveries = new Counter({
      name: "portcullis_webhook_deliveries_total",
      help: "Webhook delivery attempts, by outcome (delivered, failed)",
      labelNames: ["outcome"],
      registers,
    });
    this.#cacheMetrics(cacheStats, registers);
    this.#databaseMetrics(registers);
  }

  recordRequest(method: string, route: string, status: number, seconds: number): void {
    this.#http.inc({ method, route, status: String(status) });
    this.#httpSeconds.observe({ method, route }, seconds);
  }

  recordReconcile(serverId: string, ok: boolean): void {
    this.#reconciles.inc({ server: serverId, outcome: ok ? "ok" : "failed" });
  }

  recordTraffic(uplinkBytes: number, downlinkBytes: number): void {
    if (uplinkBytes > 0) this.#trafficBytes.inc({ direction: "uplink" }, uplinkBytes);
    if (downlinkBytes > 0) this.#trafficBytes.inc({ direction: "downlink" }, downlinkBytes);
  }

  recordTransition(to: string, count = 1): void {
    if (count > 0) this.#transitions.inc({ to }, count);
  }

  recordDelivery(ok: boolean): void {
    this.#deliveries.inc({ outcome: ok ? "delivered" : "failed" });
  }

  async render(): Promise<{ contentType: string; body: string }> {
    this.#snapshot = undefined;
    try {
      return { contentType: this.registry.contentType, body: await this.registry.metrics() };
    } finally {
      this.#snapshot = undefined;
    }
  }

  /** The cache keeps running totals; counters advance by what changed since the last scrape. */
  #cacheMetrics(source: CacheStatsSource, registers: Registry[]): void {
    const last = { hits: 0, misses: 0, notStored: 0 };
    const totals = (name: "hits" | "misses" | "notStored", metric: string, help: string) =>
      new Counter({
        name: `portcullis_subscription_cache_${metric}_total`,
        help,
        registers,
        collect() {
          const now = source.stats()[name];
          if (now > last[name]) this.inc(now - last[name]);
          last[name] = now;
        },
      });
    totals("hits", "hits", "GET /sub answers served from memory (fast path or route)");
    totals("misses", "misses", "GET /sub answers that read the user from the database");
    totals(
      "notStored",
      "not_stored",
      "Users read from the database but not kept in memory: the budget was full",
    );
    const gauge = (name: string, help: string, pick: (s: CacheStats) => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(pick(source.stats()));
        },
      });
    gauge("portcullis_subscription_cache_entries", "Users held in the subscription index", (s) => s.entries);
    gauge("portcullis_subscription_cache_bytes", "Bytes the subscription index uses", (s) => s.bytes);
    gauge(
      "portcullis_subscription_cache_budget_bytes",
      "The subscription index's byte budget",
      (s) => s.budgetBytes,
    );
  }

  #databaseMetrics(registers: Registry[]): void {
    const snapshot = () => this.#readSnapshot();
    new Gauge({
      name: "portcullis_core_up",
      help: "1 when the server's core answered its last poll, else 0",
      labelNames: ["server", "name"],
      registers,
      async collect() {
        this.reset();
        for (const server of (await snapshot()).servers) {
          this.set({ server: server.id, name: server.name }, server.status === "online" ? 1 : 0);
        }
      },
    });
    const now = this.now;
    new Gauge({
      name: "portcullis_reconcile_lag_seconds",
      help: "Seconds since the server was last reconciled with the database",
      labelNames: ["server", "name"],
      registers,
      async collect() {
        this.reset();
        for (const server of (await snapshot()).servers) {
          if (server.lastReconciledAt === null) continue;
          const lag = (now() - Date.parse(server.lastReconciledAt)) / 1000;
          this.set({ server: server.id, name: server.name }, Math.max(0, lag));
        }
      },
    });
    new Gauge({
      name: "portcullis_grants",
      help: "Access grants by sync state (synced, pending, error)",
      labelNames: ["state"],
      registers,
      async collect() {
        this.reset();
        for (const [state, n] of (await snapshot()).grants) this.set({ state }, n);
      },
    });
  }

  #readSnapshot() {
    this.#snapshot ??= Promise.all([this.repo.servers(), this.repo.grantsBySyncState()]).then(
      ([servers, grants]) => ({ servers, grants }),
    );
    return this.#snapshot;
  }
}
