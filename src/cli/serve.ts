// `portcullis serve` (what `npm start` runs): migrate, listen, bootstrap the first admin, run the
// background jobs, and shut down gracefully on SIGTERM/SIGINT (shutdown.ts).
import { createServer } from "node:net";
import { buildApp } from "../app.ts";
import type { Config } from "../config/config.ts";
import type { Deps } from "../deps.ts";
import { scheduledBackupJob } from "../jobs/backup.ts";
import { collectTrafficJob } from "../jobs/collect-traffic.ts";
import { deliverNotificationsJob } from "../jobs/deliver-notifications.ts";
import { fairUseJob } from "../jobs/fair-use.ts";
import { lifecycleJob } from "../jobs/lifecycle.ts";
import { pruneAuditJob } from "../jobs/prune-audit.ts";
import { pruneUsageJob } from "../jobs/prune-usage.ts";
import { reconcileJob } from "../jobs/reconcile.ts";
import { renewCertificatesJob } from "../jobs/renew-certificates.ts";
import { renewNodeCertificatesJob } from "../jobs/renew-node-certificates.ts";
import { type Job, startJobs } from "../jobs/runner.ts";
import { subscriptionCacheJob, warmBeforeListening } from "../jobs/subscription-cache.ts";
import { subscriptionHealthJob } from "../jobs/subscription-health.ts";
import { CliError } from "./cli-error.ts";
import { loadConfigOrExit, openDeps } from "./config.ts";
import { shutDown, stopRequested } from "./shutdown.ts";

export const usage = `usage: portcullis serve

Runs the HTTP API (HOST:PORT, default 127.0.0.1:8080), the dashboard, /sub, and the background jobs:
core reconciliation, traffic collection, certificate renewal, the subscription cache and, with
PORTCULLIS_BACKUP_DIR, scheduled backups. Migrates the database first. On a database without an
admin it creates one (PORTCULLIS_ADMIN_USERNAME / PORTCULLIS_ADMIN_PASSWORD, or a random password
printed once). SIGTERM or Ctrl-C stops it gracefully (PORTCULLIS_SHUTDOWN_TIMEOUT_MS); a second
one stops it at once. All settings: README.md, Configuration.
`;

/**
 * How long a start may spend reading users into memory before it listens (100,000 users: 5-10 s on a
 * busy 2-vCPU machine; 1,000,000: ~60 s, the rest then read by the job while it serves).
 */
const WARM_BEFORE_LISTEN_MS = 20_000;

export async function run(args: string[]): Promise<number> {
  if (args.length > 0)
    throw new CliError(`serve takes no arguments (settings are environment variables)\n\n${usage}`, 2);
  const config = loadConfigOrExit();
  const stop = stopRequested();
  // Requests never wait for a SQLite checkpoint: a worker thread does them (db/checkpointer.ts).
  const deps = await openDeps(config, undefined, { backgroundCheckpoints: true });
  // Before the first admin exists: a start that cannot listen prints no password to lose.
  await probeListen(config).catch(async (error: unknown) => {
    await deps.close();
    throw listenFailure(error, config);
  });
  await bootstrapAdmin(config, deps);
  const app = await buildApp(deps);
  // Polls after a restart are answered from memory; past the bound the job warms the rest.
  const isWarm = await warmBeforeListening(deps.services.subscriptions, deps.logger, WARM_BEFORE_LISTEN_MS);
  if (stop.signal.aborted) {
    await app.close();
    await deps.close();
    return 0;
  }
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    await app.close();
    await deps.close();
    throw listenFailure(error, config);
  }
  const jobs = startJobs(backgroundJobs(config, deps, isWarm), deps.logger);
  await stop.stopped;
  const { isWithinDeadline } = await shutDown({
    closeServer: () => app.close(),
    cutConnections: () => app.server.closeAllConnections(),
    stopJobs: () => jobs.stop(),
    flush: async () => {
      // Traffic read with reset from the cores, and the /sub fetches noted in memory.
      const [traffic, fetches] = await Promise.allSettled([
        deps.services.traffic.flush(),
        deps.services.subscriptions.flushFetches(),
      ]);
      for (const result of [traffic, fetches]) if (result.status === "rejected") throw result.reason;
    },
    closeDeps: () => deps.close(),
    log: { info: (m) => deps.logger.info(m), warn: (m) => deps.logger.warn(m) },
    deadlineMs: config.shutdownTimeoutMs,
  });
  return isWithinDeadline ? 0 : 1;
}

/** Binds HOST:PORT for a moment, so a port in use is reported before anything else happens. */
function probeListen(config: Config): Promise<void> {
  if (config.port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen({ host: config.host, port: config.port, exclusive: true }, () =>
      probe.close(() => resolve()),
    );
  });
}

async function bootstrapAdmin(config: Config, deps: Deps): Promise<void> {
  const first = await deps.services.auth.ensureFirstAdmin(config.adminUsername, config.adminPassword);
  if (first?.generatedPassword !== undefined) {
    // Printed once to the terminal, deliberately not through the logger.
    process.stderr.write(
      `\nFirst start: created admin "${config.adminUsername}" with password\n\n    ${first.generatedPassword}\n\n` +
        "It is not shown again; change it with `portcullis admin reset-password`.\n\n",
    );
  } else if (first === undefined && config.adminPassword !== undefined) {
    process.stderr.write(
      "portcullis: PORTCULLIS_ADMIN_PASSWORD is ignored: this database already has an admin (it only " +
        "sets the first admin's password). To change a password: " +
        `echo 'new-password' | portcullis admin reset-password --username ${config.adminUsername} --password-stdin\n`,
    );
  }
}

/** The usual reasons a listen fails, as one line; anything else stays an error with its trace. */
function listenFailure(error: unknown, config: Config): unknown {
  const where = `${config.host}:${config.port}`;
  const reasons: Record<string, string> = {
    EADDRINUSE: `${where} is already in use by another process (choose another PORT, or stop that one)`,
    EACCES: `permission denied for ${where} (ports below 1024 need root or CAP_NET_BIND_SERVICE)`,
    EADDRNOTAVAIL: `${config.host} is not an address of this machine (HOST)`,
    ENOTFOUND: `HOST ${config.host} does not resolve`,
  };
  const code = (error as NodeJS.ErrnoException).code;
  const reason = code === undefined ? undefined : reasons[code];
  return reason === undefined ? error : new CliError(`cannot listen: ${reason}`);
}

/** Certificate renewal, convergence, traffic, subscriptions in memory, scheduled backups (docs/DEPLOY.md). */
function backgroundJobs(config: Config, deps: Deps, isWarm: boolean): Job[] {
  const { leases, logger } = deps;
  const { reconcileIntervalMs, reconcileConcurrency, trafficIntervalMs } = config.convergence;
  const jobs = [
    renewCertificatesJob(deps.services.certificates, logger),
    renewNodeCertificatesJob({ nodes: deps.services.nodes, servers: deps.services.servers, leases, logger }),
    pruneAuditJob(deps.services.audit, logger),
    pruneUsageJob(deps.services.usage, logger, config.usagePruneIntervalMs),
    deliverNotificationsJob(deps.services.dispatcher, logger),
    reconcileJob({
      ...{ reconciler: deps.services.reconciler, servers: deps.services.servers, leases, logger },
      ...{ intervalMs: reconcileIntervalMs, concurrency: reconcileConcurrency },
      onTick: (serverId, ok) => deps.services.metrics.recordReconcile(serverId, ok),
    }),
    collectTrafficJob({
      ...{ traffic: deps.services.traffic, leases, logger },
      ...{ intervalMs: trafficIntervalMs, concurrency: reconcileConcurrency },
      afterFold: () => deps.services.lifecycle.tick(),
    }),
    lifecycleJob(deps.services.lifecycle, logger, config.lifecycle.intervalMs),
    fairUseJob(deps.services.fairUse, logger, trafficIntervalMs),
    subscriptionHealthJob(deps.services.servers, deps.services.subscriptionSettings, logger),
    subscriptionCacheJob({
      ...{ subscriptions: deps.services.subscriptions, logger, warm: !isWarm },
      intervalMs: config.subscriptions.syncIntervalMs,
    }),
  ];
  const { dir } = config.backups;
  if (dir !== undefined) {
    const schedule = { ...config.backups, dir, dialect: deps.database.dialect };
    jobs.push(scheduledBackupJob(schedule, deps.services.backups, logger));
  }
  return jobs;
}
