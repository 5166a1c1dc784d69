// `portcullis serve` (what `npm start` runs): migrate, bootstrap the first admin, listen, run the
// background jobs, and shut down cleanly on SIGINT/SIGTERM.
import { buildApp } from "../app.ts";
import type { Config } from "../config/config.ts";
import { createDeps, type Deps } from "../deps.ts";
import { collectTrafficJob } from "../jobs/collect-traffic.ts";
import { reconcileJob } from "../jobs/reconcile.ts";
import { renewCertificatesJob } from "../jobs/renew-certificates.ts";
import { type Job, startJobs } from "../jobs/runner.ts";
import { subscriptionCacheJob, warmBeforeListening } from "../jobs/subscription-cache.ts";
import { loadConfigOrExit } from "./config.ts";

/**
 * How long a start may spend reading users into memory before it listens (100,000 users: 5-10 s on a
 * busy 2-vCPU machine; 1,000,000: ~60 s, the rest then read by the job while it serves).
 */
const WARM_BEFORE_LISTEN_MS = 20_000;

export async function run(_args: string[]): Promise<number> {
  const config = loadConfigOrExit();
  const deps = await createDeps(config);
  const first = await deps.services.auth.ensureFirstAdmin(config.adminUsername, config.adminPassword);
  if (first?.generatedPassword !== undefined) {
    // Printed once to the terminal, deliberately not through the logger.
    process.stderr.write(
      `\nFirst start: created admin "${config.adminUsername}" with password\n\n    ${first.generatedPassword}\n\n` +
        "It is not shown again; change it with `portcullis admin reset-password`.\n\n",
    );
  }
  const app = await buildApp(deps);
  // Polls after a restart are answered from memory; past the bound the job warms the rest.
  const isWarm = await warmBeforeListening(deps.services.subscriptions, deps.logger, WARM_BEFORE_LISTEN_MS);
  await app.listen({ host: config.host, port: config.port });
  const jobs = startJobs(backgroundJobs(config, deps, isWarm), deps.logger);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  app.log.info("shutting down");
  await jobs.stop();
  await app.close();
  await deps.close();
  return 0;
}

/** Certificate renewal, the convergence loop and traffic collection (docs/CONVERGENCE.md), subscriptions in memory. */
function backgroundJobs(config: Config, deps: Deps, isWarm: boolean): Job[] {
  const { leases, logger } = deps;
  const { reconcileIntervalMs, reconcileConcurrency, trafficIntervalMs } = config.convergence;
  return [
    renewCertificatesJob(deps.services.certificates, logger),
    reconcileJob({
      ...{ reconciler: deps.services.reconciler, servers: deps.services.servers, leases, logger },
      ...{ intervalMs: reconcileIntervalMs, concurrency: reconcileConcurrency },
    }),
    collectTrafficJob({
      ...{ traffic: deps.services.traffic, leases, logger },
      ...{ intervalMs: trafficIntervalMs, concurrency: reconcileConcurrency },
    }),
    subscriptionCacheJob({
      ...{ subscriptions: deps.services.subscriptions, logger, warm: !isWarm },
      intervalMs: config.subscriptions.syncIntervalMs,
    }),
  ];
}
