// A real app for tests: SQLite in a temp dir, or — when DATABASE_URL is set — PostgreSQL in a fresh
// schema of its own, so test files run in parallel. Logs go to a file the test runner greps for
// leaked secrets after the whole suite.
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { buildApp } from "../../src/app.ts";
import { type Config, loadConfig } from "../../src/config/config.ts";
import { dropSchema } from "../../src/db/connection.ts";
import { createDeps, type Deps, REDACT_PATHS } from "../../src/deps.ts";
import { serializeRequest } from "../../src/lib/log-serializers.ts";
import type { MemoryFleet } from "./memory-core.ts";

export const ADMIN = { username: "admin", password: "correct horse battery" } as const;

export type TestApp = {
  app: Awaited<ReturnType<typeof buildApp>>;
  deps: Deps;
  token: string;
  auth: { authorization: string };
  close(): Promise<void>;
};

export function testLogger(): pino.Logger {
  const dir = process.env.PORTCULLIS_TEST_LOG_DIR ?? join(tmpdir(), "portcullis-test-logs");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${process.pid}-${randomBytes(4).toString("hex")}.log`);
  return pino(
    {
      level: "info",
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      serializers: { req: serializeRequest },
    },
    pino.destination({ dest: file, sync: true }),
  );
}

export function testConfig(overrides: Record<string, string> = {}): Config {
  const env: Record<string, string | undefined> = {
    DATA_DIR: mkdtempSync(join(tmpdir(), "portcullis-test-")),
    DATABASE_URL: process.env.DATABASE_URL,
    PORTCULLIS_SECRET_KEY: randomBytes(32).toString("hex"),
    ...overrides,
  };
  return loadConfig(env);
}

export type TestAppOptions = {
  /** A second instance on the first one's database (PostgreSQL: its schema; SQLite: its file). */
  sameDatabaseAs?: TestApp;
  /** Cores in memory instead of gRPC: servers registered at 127.0.0.1:<port> reach fleet.add(port). */
  cores?: MemoryFleet;
  /** Serve the Swagger UI at /api/docs, as `serve` does (off in tests that do not look at it). */
  docsUi?: boolean;
  /** The size cap (bytes) of users inline in a full apply's AddInbound; the rest go by AddUser. */
  inlineUsersMaxBytes?: number;
};

export async function createTestApp(
  overrides: Record<string, string> = {},
  options: TestAppOptions = {},
): Promise<TestApp> {
  const first = options.sameDatabaseAs?.deps;
  const shared: Record<string, string> =
    first === undefined
      ? {}
      : {
          DATA_DIR: first.config.dataDir,
          PORTCULLIS_SECRET_KEY: first.config.secretKey?.toString("hex") ?? "",
        };
  const config = testConfig({ ...overrides, ...shared });
  const schema =
    first !== undefined
      ? first.database.schema
      : config.databaseUrl === undefined
        ? undefined
        : `t_${randomBytes(6).toString("hex")}`;
  const deps = await createDeps(config, {
    logger: testLogger(),
    ...(schema === undefined ? {} : { schema }),
    ...(options.cores === undefined ? {} : { connectCore: options.cores.connect }),
    ...(options.inlineUsersMaxBytes === undefined
      ? {}
      : { inlineUsersMaxBytes: options.inlineUsersMaxBytes }),
  });
  await deps.services.auth.ensureFirstAdmin(ADMIN.username, ADMIN.password);
  const app = await buildApp(deps, { docsUi: options.docsUi === true, pluginTimeoutMs: 0 });
  await app.ready();
  const login = await app.inject({ method: "POST", url: "/api/auth/token", payload: ADMIN });
  const token = (login.json() as { access_token: string }).access_token;
  return {
    app,
    deps,
    token,
    auth: { authorization: `Bearer ${token}` },
    async close() {
      await app.close();
      // The first instance owns the database; a joined one leaves it to that one.
      if (first === undefined && schema !== undefined) {
        await dropSchema(deps.database, schema);
      }
      await deps.close();
      if (first === undefined) rmSync(config.dataDir, { recursive: true, force: true });
    },
  };
}
