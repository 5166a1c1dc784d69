// An import killed with SIGKILL halfway, then run again (issue 51): `portcullis import marzban` runs as
// a real child process on a database of its own (a SQLite directory, or a scratch PostgreSQL database
// when DATABASE_URL is set), with a real V2Ray core as the server. The test polls the database until
// some users are in, kills the process with SIGKILL, checks that only whole batches are there, runs
// the import again to the end, and checks the fixture's counts with nothing doubled: users, old URL
// keys, grants, templates, inbounds, hosts, admins and the signing secret.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { testLogger } from "../../../test/support/app.ts";
import {
  MARZBAN_INBOUNDS,
  marzbanTables,
  marzbanXrayConfig,
  writeMarzbanSqlite,
} from "../../../test/support/peer-fixtures.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { type Store, sharedStore } from "../../../test/support/portcullis-process.ts";
import { freePort } from "../../../test/support/ports.ts";
import { requires } from "../../../test/support/requires.ts";
import { CleanupStack, startV2rayServer, tempDir } from "../../../test/support/v2ray.ts";
import { loadConfig } from "../../config/config.ts";
import { createDeps, type Deps } from "../../deps.ts";
import type { ImportReport } from "./import.service.ts";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const N = 3000;
const BATCH = 50;
const needs = requires("v2ray");
const stack = new CleanupStack();
let store: Store;
let deps: Deps;
let serverId: string;
let dbPath: string;

const { tables } = marzbanTables(N);
const proxiesOf = (type: string) => (tables.proxies?.rows ?? []).filter((p) => p.type === type).length;

needs.before(async () => {
  store = await sharedStore(stack.add);
  deps = await createDeps(loadConfig(store.env), { logger: testLogger() });
  stack.add(() => deps.close());
  const core = await startV2rayServer(stack.add);
  serverId = (
    await deps.services.servers.create({ name: "crash", hostname: "127.0.0.1", grpc_port: core.apiPort })
  ).id;
  const dir = tempDir(stack.add);
  dbPath = join(dir, "db.sqlite3");
  writeMarzbanSqlite(dbPath, N);
  const ports: Record<string, number> = {};
  for (const inbound of MARZBAN_INBOUNDS) ports[inbound.tag] = await freePort();
  writeFileSync(join(dir, "xray_config.json"), JSON.stringify(marzbanXrayConfig(ports)));
});
needs.after(() => stack.run());

type Child = { child: ChildProcess; out: () => string; err: () => string };

/** `portcullis import marzban …` as a child process on the store's database. */
function startImport(): Child {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      join(ROOT, "src/main.ts"),
      "import",
      "marzban",
      "--db",
      dbPath,
      "--server",
      serverId,
      "--batch",
      String(BATCH),
      "--json",
    ],
    {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: process.env.PATH ?? "", LOG_LEVEL: "warn", ...store.env },
    },
  );
  let out = "";
  let err = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    err = (err + chunk.toString()).slice(-10_000);
  });
  stack.add(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  return { child, out: () => out, err: () => err };
}

const TABLES = [
  "users",
  "user_access",
  "import_links",
  "import_secrets",
  "admins",
  "templates",
  "server_inbounds",
  "inbound_hosts",
] as const;

async function counts(): Promise<Record<(typeof TABLES)[number], number>> {
  const result = Object.fromEntries(TABLES.map((table) => [table, 0])) as Record<
    (typeof TABLES)[number],
    number
  >;
  for (const table of TABLES) {
    const row = await deps.database.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number | string>().as("n"))
      .executeTakeFirstOrThrow();
    result[table] = Number(row.n);
  }
  return result;
}

describe("an import killed with SIGKILL", needs, () => {
  test("halfway through the users: run again, it completes with the fixture's counts and nothing doubled", async () => {
    const before = await counts();
    const first = startImport();
    const exited = once(first.child, "exit");
    // Some users are in (a batch committed): kill it there, without warning.
    const seen = await waitFor(
      async () => {
        if (first.child.exitCode !== null) throw new Error(`the import ended first: ${first.err()}`);
        const n = (await counts()).users - before.users;
        return n > 0 ? n : undefined;
      },
      { timeoutMs: 240_000, intervalMs: 10, what: `the first users to be in (${first.err().slice(-300)})` },
    );
    first.child.kill("SIGKILL");
    const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
    assert.equal(signal, "SIGKILL", `killed, not ended (code ${code})`);
    const partial = await counts();
    const kept = partial.users - before.users;
    assert.ok(kept >= seen && kept < N, `killed halfway: ${kept} of ${N} users in`);
    assert.equal(kept % BATCH, 0, "only whole batches are kept (one transaction each)");
    assert.equal(partial.import_links - before.import_links, kept, "each kept user has its old URL key");

    const second = startImport();
    const [secondCode] = (await once(second.child, "exit")) as [number | null];
    assert.equal(secondCode, 0, second.err());
    const report = JSON.parse(second.out()) as ImportReport;
    assert.equal(report.users.found, N);
    assert.equal(report.users.already, kept);
    assert.equal(report.users.created, N - kept);

    const after = await counts();
    assert.equal(after.users - before.users, N);
    assert.equal(after.import_links - before.import_links, N);
    const excluded = tables.exclude_inbounds_association?.rows.length ?? 0;
    const grants = proxiesOf("vless") + proxiesOf("vmess") - excluded + proxiesOf("trojan");
    assert.equal(after.user_access - before.user_access, grants, JSON.stringify(report.left_out));
    assert.equal(after.templates - before.templates, MARZBAN_INBOUNDS.length);
    assert.equal(after.server_inbounds - before.server_inbounds, MARZBAN_INBOUNDS.length);
    // One host per inbound fits (the CDN ones are refused): killed or not, each is there once.
    assert.equal(after.inbound_hosts - before.inbound_hosts, MARZBAN_INBOUNDS.length);
    assert.equal(after.admins - before.admins, 2);
    assert.equal(after.import_secrets, 1);
    const names = await deps.database.db
      .selectFrom("users")
      .select((eb) => [eb.fn.count<number | string>("name").distinct().as("n")])
      .executeTakeFirstOrThrow();
    assert.equal(Number(names.n), after.users, "no user name twice");
  });
});
