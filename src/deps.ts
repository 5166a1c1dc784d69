// createDeps(config): the one place where the database, the secret box, repositories and services
// are wired together. Routes, CLI commands and jobs receive what they need from here.
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pino, { type Logger } from "pino";
import type { Config } from "./config/config.ts";
import type { CoreClient } from "./cores/core-client.ts";
import { CorePool } from "./cores/core-pool.ts";
import type { GrpcCoreClientOptions } from "./cores/grpc-core-client.ts";
import { NodeTransport } from "./cores/node-transport.ts";
import {
  CHECKPOINT_INTERVAL_MS,
  type DatabaseHandle,
  migrateToLatest,
  openDatabase,
} from "./db/connection.ts";
import type { ChangeEvents } from "./domain/changes.ts";
import { AccessRepository } from "./features/access/access.repository.ts";
import { AccessService } from "./features/access/access.service.ts";
import { BulkGrants } from "./features/access/bulk-grant.ts";
import { Enrolment } from "./features/access/enrolment.ts";
import { GroupGrants } from "./features/access/group-grants.ts";
import { AdminsService } from "./features/admins/admins.service.ts";
import { AuditRepository } from "./features/audit/audit.repository.ts";
import { AuditService } from "./features/audit/audit.service.ts";
import { AdminsRepository } from "./features/auth/admins.repository.ts";
import { AuthRepository } from "./features/auth/auth.repository.ts";
import { AuthService } from "./features/auth/auth.service.ts";
import { OwnCredentials } from "./features/auth/own-credentials.ts";
import { LoginThrottle } from "./features/auth/throttle.ts";
import { TwoFactor } from "./features/auth/two-factor.ts";
import { BackupService } from "./features/backup/backup.service.ts";
import { AcmeAccountsRepository } from "./features/certificates/acme-accounts.repository.ts";
import { AcmeIssuer } from "./features/certificates/acme-issuer.ts";
import { CertificatesRepository } from "./features/certificates/certificates.repository.ts";
import { CertificatesService } from "./features/certificates/certificates.service.ts";
import { DevicesRepository } from "./features/devices/devices.repository.ts";
import { DevicesService } from "./features/devices/devices.service.ts";
import { FairUseRepository } from "./features/fairuse/fairuse.repository.ts";
import { FairUseService } from "./features/fairuse/fairuse.service.ts";
import { GroupsRepository } from "./features/groups/groups.repository.ts";
import { GroupsService } from "./features/groups/groups.service.ts";
import { ImportRepository } from "./features/import/import.repository.ts";
import { ImportService } from "./features/import/import.service.ts";
import { ImportJobs } from "./features/import/import-jobs.service.ts";
import { LegacySubscriptions } from "./features/import/legacy.service.ts";
import { HostsRepository } from "./features/inbounds/hosts.repository.ts";
import { HostsService } from "./features/inbounds/hosts.service.ts";
import { InboundsRepository } from "./features/inbounds/inbounds.repository.ts";
import { InboundsService } from "./features/inbounds/inbounds.service.ts";
import { MetricsRepository } from "./features/metrics/metrics.repository.ts";
import { MetricsService } from "./features/metrics/metrics.service.ts";
import { NodeAuthority } from "./features/nodes/node-authority.ts";
import { NodeAccessLookup, NodesRepository } from "./features/nodes/nodes.repository.ts";
import { NodesService } from "./features/nodes/nodes.service.ts";
import { Dispatcher } from "./features/notifications/dispatcher.ts";
import { NotificationsRepository } from "./features/notifications/notifications.repository.ts";
import { Notifier } from "./features/notifications/notifier.ts";
import { WebhooksService } from "./features/notifications/webhooks.service.ts";
import { OverviewRepository } from "./features/overview/overview.repository.ts";
import { OverviewService } from "./features/overview/overview.service.ts";
import { PlansRepository } from "./features/plans/plans.repository.ts";
import { PlansService } from "./features/plans/plans.service.ts";
import { ServersRepository } from "./features/servers/servers.repository.ts";
import { ServersService } from "./features/servers/servers.service.ts";
import { SubscriptionSettingsRepository } from "./features/subscription-settings/subscription-settings.repository.ts";
import { SubscriptionSettingsService } from "./features/subscription-settings/subscription-settings.service.ts";
import { subscriptionIndex } from "./features/subscriptions/layout-templates.ts";
import { SubscriptionsRepository } from "./features/subscriptions/subscriptions.repository.ts";
import { SubscriptionsService } from "./features/subscriptions/subscriptions.service.ts";
import { CoreSync } from "./features/sync/core-sync.ts";
import { LeasesRepository } from "./features/sync/leases.repository.ts";
import { DatabaseLeases, type ServerLeases, SoleInstance } from "./features/sync/leases.ts";
import { Reconciler } from "./features/sync/reconciler.ts";
import { RemovalsRepository } from "./features/sync/removals.repository.ts";
import { ServerSyncRepository } from "./features/sync/server-sync.repository.ts";
import { TemplatesRepository } from "./features/templates/templates.repository.ts";
import { TemplatesService } from "./features/templates/templates.service.ts";
import { TrafficRepository } from "./features/traffic/traffic.repository.ts";
import { TrafficService } from "./features/traffic/traffic.service.ts";
import { UsageRepository } from "./features/traffic/usage.repository.ts";
import { UsageService } from "./features/traffic/usage.service.ts";
import { UserBulkActions } from "./features/users/bulk-actions.service.ts";
import { LifecycleRepository } from "./features/users/lifecycle.repository.ts";
import { LifecycleService } from "./features/users/lifecycle.service.ts";
import { QuotasRepository } from "./features/users/quotas.repository.ts";
import { UserFiltersRepository } from "./features/users/user-filters.repository.ts";
import { UserListService } from "./features/users/user-list.service.ts";
import { UsersRepository } from "./features/users/users.repository.ts";
import { UsersService } from "./features/users/users.service.ts";
import { type Changes, EventBus } from "./lib/events.ts";
import { serializeRequest } from "./lib/log-serializers.ts";
import { SecretBox } from "./lib/secret-box.ts";
import { wireReactions } from "./reactions/reactions.ts";

export type Deps = {
  config: Config;
  logger: Logger;
  database: DatabaseHandle;
  secretBox: SecretBox;
  services: {
    auth: AuthService;
    ownCredentials: OwnCredentials;
    admins: AdminsService;
    audit: AuditService;
    metrics: MetricsService;
    notifier: Notifier;
    webhooks: WebhooksService;
    dispatcher: Dispatcher;
    certificates: CertificatesService;
    users: UsersService;
    userLists: UserListService;
    userBulkActions: UserBulkActions;
    templates: TemplatesService;
    servers: ServersService;
    inbounds: InboundsService;
    hosts: HostsService;
    access: AccessService;
    importer: ImportService;
    importJobs: ImportJobs;
    legacySubscriptions: LegacySubscriptions;
    bulkGrants: BulkGrants;
    enrolment: Enrolment;
    groups: GroupsService;
    plans: PlansService;
    backups: BackupService;
    subscriptions: SubscriptionsService;
    subscriptionSettings: SubscriptionSettingsService;
    sync: CoreSync;
    reconciler: Reconciler;
    traffic: TrafficService;
    nodes: NodesService;
    overview: OverviewService;
    usage: UsageService;
    lifecycle: LifecycleService;
    fairUse: FairUseService;
    devices: DevicesService;
  };
  /** What changed, for listeners outside the services (jobs, tests). */
  events: Changes;
  cores: CorePool;
  /** Which servers this instance reconciles: all of them on SQLite, leased ones on PostgreSQL. */
  leases: ServerLeases;
  close(): Promise<void>;
};

/** Scheduled SQLite backups copy 1 MiB per event-loop turn: requests are never held up long. */
const BACKUP_PAGES_PER_STEP = 256;

export type DepsOptions = {
  logger?: Logger;
  /** PostgreSQL only: isolate this instance in its own schema (tests). */
  schema?: string;
  /** How a core is reached: gRPC unless given (tests give cores in memory, test/support/memory-core.ts). */
  connectCore?: (options: GrpcCoreClientOptions) => CoreClient;
  /**
   * SQLite: WAL checkpoints by a worker thread (db/checkpointer.ts), off the event loop. `serve` asks
   * for it; a CLI command or a test has no requests to keep waiting and no thread to spare for it.
   */
  backgroundCheckpoints?: boolean;
  /** The size cap of users inline in AddInbound (core-sync.ts); tests make it small. */
  inlineUsersMaxBytes?: number;
};

/** Log redaction: credentials never reach a log line even if a future log call includes them. */
export const REDACT_PATHS = [
  "req.headers.authorization",
  "*.password",
  "*.api_credentials",
  "*.private_key",
  "*.privateKey",
  "*.access_token",
  "*.key",
  "*.token",
];

export function createLogger(config: Config): Logger {
  return pino({
    level: config.logLevel,
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    serializers: { req: serializeRequest },
  });
}

export async function createDeps(config: Config, options: DepsOptions = {}): Promise<Deps> {
  const logger = options.logger ?? createLogger(config);
  const database = await openDatabase({
    dataDir: config.dataDir,
    databaseUrl: config.databaseUrl,
    ...(options.schema === undefined ? {} : { schema: options.schema }),
    ...(options.backgroundCheckpoints === true ? { checkpointIntervalMs: CHECKPOINT_INTERVAL_MS } : {}),
  });
  try {
    const applied = await migrateToLatest(database);
    if (applied.length > 0) logger.info({ migrations: applied }, "database migrated");
  } catch (error) {
    await database.close();
    throw error;
  }
  const secretKey = config.secretKey ?? loadOrCreateKey(config.dataDir);
  const secretBox = new SecretBox(secretKey);
  // Lower features say what changed (domain/changes.ts); the reactions are wired at the end.
  const events: Changes = new EventBus<ChangeEvents>();
  const audit = new AuditService(new AuditRepository(database.db), config.auditRetentionDays);
  const adminsRepository = new AdminsRepository(database.db, database.dialect);
  const tokens = new AuthRepository(database.db);
  const twoFactor = new TwoFactor(adminsRepository, secretBox, () => new Date());
  // One throttle: wrong passwords and codes at sign-in and in self-service changes share its budgets.
  const throttle = new LoginThrottle();
  const auth = new AuthService(tokens, adminsRepository, twoFactor, throttle, config.tokenTtlSeconds, audit);
  const ownCredentials = new OwnCredentials(adminsRepository, tokens, twoFactor, throttle);
  const admins = new AdminsService(adminsRepository, auth, {
    // Declared further down; called only once requests are served.
    disableOwnedBy: async (adminId) =>
      (
        await userBulkActions.runOver(
          { action: { type: "set_status", status: "disabled" }, filter: { owner_admin_id: adminId } },
          undefined,
        )
      ).changed,
  });
  const certificatesRepository = new CertificatesRepository(database.db);
  const certificates = new CertificatesService(
    certificatesRepository,
    secretBox,
    new AcmeIssuer(config.certificates.acme, new AcmeAccountsRepository(database.db), secretBox),
    config.certificates,
    events,
    logger,
  );
  const inboundsRepository = new InboundsRepository(database.db);
  const accessRepository = new AccessRepository(database.db);
  const templates = new TemplatesService(new TemplatesRepository(database.db), inboundsRepository, events);
  const cores = new CorePool(
    { timeoutMs: config.coreTimeoutMs, resetReadTimeoutMs: config.trafficReadTimeoutMs },
    options.connectCore,
    (address, material, transport) => new NodeTransport(address, material, transport),
  );
  const notificationsRepository = new NotificationsRepository(database.db, database.dialect);
  // Memberships, read by the notifier (user events carry group_ids) and before user deletes.
  const memberships = new GroupsRepository(database.db);
  const groupIdsOf = (userIds: readonly string[]) => memberships.groupIdsOf(userIds);
  const notifier = new Notifier(notificationsRepository, logger, () => new Date(), groupIdsOf);
  const nodesRepository = new NodesRepository(database.db);
  // The node CA: the servers service reaches node agents with it, the nodes service enrols them.
  const nodeAuthority = new NodeAuthority(nodesRepository, secretBox);
  const servers = new ServersService(
    new ServersRepository(database.db),
    secretBox,
    cores,
    certificates,
    events,
    () => new Date(),
    notifier.emit,
    nodeAuthority,
  );
  const nodes = new NodesService(nodesRepository, servers, nodeAuthority, new NodeAccessLookup(database.db));
  const removals = new RemovalsRepository(database.db);
  const sync = new CoreSync({
    inbounds: inboundsRepository,
    grants: accessRepository,
    removals,
    templates,
    servers,
    certificates: certificatesRepository,
    secretBox,
    logger,
    ...(options.inlineUsersMaxBytes === undefined ? {} : { inlineMaxBytes: options.inlineUsersMaxBytes }),
  });
  // Subscriptions before the users services: they read its public URL (publicUrl()) for their links.
  const subscriptionSettings = new SubscriptionSettingsService(
    new SubscriptionSettingsRepository(database.db),
  );
  const devices = new DevicesService(
    new DevicesRepository(database.db, database.dialect),
    subscriptionSettings,
    () => new Date(),
    notifier.emit,
  );
  const subscriptions = new SubscriptionsService(
    new SubscriptionsRepository(database.db, database.dialect),
    subscriptionIndex(config.subscriptions.cacheBytes),
    logger,
    { maxAgeMs: config.subscriptions.maxAgeMs, sweepIntervalMs: config.subscriptions.syncIntervalMs },
    subscriptionSettings,
    devices,
  );
  const quotas = new QuotasRepository(database.db, database.dialect);
  const users = new UsersService(
    new UsersRepository(database.db, database.dialect),
    sync,
    () => new Date(),
    notifier.emit,
    subscriptions,
    events,
    quotas,
    { groupIdsOf },
  );
  const userFilters = new UserFiltersRepository(database.db, database.dialect);
  const userLists = new UserListService(userFilters, subscriptions);
  const userBulkActions = new UserBulkActions(
    userFilters,
    sync,
    events,
    () => new Date(),
    notifier.emit,
    quotas,
    { groupIdsOf },
  );
  const inbounds = new InboundsService(inboundsRepository, templates, servers, sync, logger);
  const hosts = new HostsService(new HostsRepository(database.db, database.dialect), inboundsRepository);
  const access = new AccessService(accessRepository, inboundsRepository, users, servers, sync);
  const importRepository = new ImportRepository(database.db, database.dialect);
  const legacySubscriptions = new LegacySubscriptions(importRepository, secretBox);
  const importer = new ImportService(
    importRepository,
    templates,
    inbounds,
    inboundsRepository,
    hosts,
    servers,
    sync,
    secretBox,
  );
  const importJobs = new ImportJobs(config.dataDir, importer, servers);
  const bulkGrants = new BulkGrants(accessRepository, inboundsRepository, users, servers, sync);
  const groupGrants = new GroupGrants(accessRepository, inboundsRepository, sync);
  const groups = new GroupsService(
    new GroupsRepository(database.db),
    inboundsRepository,
    groupGrants,
    users,
    userFilters,
  );
  const plans = new PlansService(
    new PlansRepository(database.db),
    users,
    groups,
    audit,
    logger,
    notifier.emit,
    events,
    () => new Date(),
    quotas,
  );
  const enrolment = new Enrolment(users, inboundsRepository, access, bulkGrants, sync, groups, plans);
  const leases: ServerLeases =
    database.dialect === "postgres"
      ? new DatabaseLeases(new LeasesRepository(database.db), { ttlMs: config.convergence.leaseTtlMs })
      : new SoleInstance();
  const reconciler = new Reconciler({
    sync,
    servers,
    inbounds: inboundsRepository,
    grants: accessRepository,
    removals,
    state: new ServerSyncRepository(database.db),
    leases,
    logger,
  });
  const lifecycle = new LifecycleService(
    new LifecycleRepository(database.db, database.dialect),
    {
      thresholds: config.lifecycle.usagePercents,
      expiringNoticeSeconds: config.lifecycle.expiringDays * 86_400,
    },
    () => new Date(),
    notifier.emitMany,
    events,
    // After each tick: limited or expired users with a next plan get it, once (features/plans).
    () => plans.applyDueNextPlans(),
  );
  const fairUse = new FairUseService(
    new FairUseRepository(database.db),
    nodes,
    audit,
    logger,
    () => new Date(),
    notifier.emit,
    events,
  );
  const trafficRepository = new TrafficRepository(database.db, database.dialect);
  const traffic = new TrafficService(
    trafficRepository,
    sync,
    servers,
    users,
    logger,
    () => new Date(),
    events,
    config.coreTimeoutMs,
  );
  const usage = new UsageService(
    new UsageRepository(database.db, database.dialect),
    users,
    servers,
    () => new Date(),
  );
  const backups = new BackupService(
    database.sqlite === undefined
      ? { dialect: "postgres", databaseUrl: config.databaseUrl ?? "", schema: database.schema }
      : { dialect: "sqlite", connection: database.sqlite, pagesPerStep: BACKUP_PAGES_PER_STEP },
    secretKey,
  );
  const metrics = new MetricsService(new MetricsRepository(database.db), subscriptions, {
    processMetrics: config.metricsToken !== undefined,
  });
  const webhooks = new WebhooksService(notificationsRepository, notifier, secretBox);
  const dispatcher = new Dispatcher(notificationsRepository, secretBox, logger, {
    telegramApiUrl: config.telegramApiUrl,
    deliveries: metrics,
  });
  // Who reacts to which change is the table of src/reactions/reactions.ts: nothing is wired by hand.
  wireReactions(events, { inbounds, subscriptions, reconciler, sync, lifecycle, logger });
  return {
    config,
    logger,
    database,
    secretBox,
    services: {
      auth,
      ownCredentials,
      admins,
      audit,
      metrics,
      notifier,
      webhooks,
      dispatcher,
      certificates,
      users,
      userLists,
      userBulkActions,
      templates,
      servers,
      inbounds,
      hosts,
      access,
      importer,
      importJobs,
      legacySubscriptions,
      bulkGrants,
      enrolment,
      groups,
      plans,
      backups,
      subscriptions,
      subscriptionSettings,
      sync,
      reconciler,
      traffic,
      nodes,
      overview: new OverviewService(new OverviewRepository(database.db), nodes),
      usage,
      lifecycle,
      fairUse,
      devices,
    },
    events,
    cores,
    leases,
    close: async () => {
      await importJobs.close();
      cores.closeAll();
      await certificates.close();
      await database.close();
    },
  };
}

/** The encryption key for secrets at rest: generated once into DATA_DIR with mode 0600. */
function loadOrCreateKey(dataDir: string): Buffer {
  const path = join(dataDir, "secret.key");
  if (!existsSync(path)) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(path, randomBytes(32).toString("hex"), { mode: 0o600, flag: "wx" });
  }
  chmodSync(path, 0o600);
  const key = Buffer.from(readFileSync(path, "utf8").trim(), "hex");
  if (key.length !== 32) throw new Error(`${path} does not hold a 32-byte hex key`);
  return key;
}
