// A private PostgreSQL 15 cluster for tests that stop the database for real (the outage test): its
// own data directory in a temp dir, its own port on 127.0.0.1, run as the `postgres` OS user
// (PostgreSQL refuses to run as root) through runuser, trust authentication for the superuser
// `root`. stop() is `pg_ctl stop -m immediate`: the server ends at once, its connections cut, as a
// crash or a kill would; start() brings it back on the same port and data.
import { execFile } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./ports.ts";
import type { Cleanup } from "./v2ray.ts";

const run = promisify(execFile);
export const PG_BIN = "/usr/lib/postgresql/15/bin";
/** What requires() must find for a cluster of our own. */
export const PG_CLUSTER_BINARIES = ["runuser", `${PG_BIN}/initdb`, `${PG_BIN}/pg_ctl`] as const;

export type PgCluster = {
  port: number;
  /** postgres://root@127.0.0.1:<port>/postgres */
  url: string;
  start(): Promise<void>;
  /** Immediate shutdown: no checkpoint, every connection cut. */
  stop(): Promise<void>;
};

async function asPostgres(args: string[]): Promise<void> {
  await run("runuser", ["-u", "postgres", "--", ...args], { timeout: 60_000 });
}

export async function startPgCluster(cleanup: Cleanup): Promise<PgCluster> {
  const dir = mkdtempSync(join(tmpdir(), "portcullis-pg-"));
  const data = join(dir, "data");
  const ids = await run("id", ["-u", "postgres"]).then(async (uid) => ({
    uid: Number(uid.stdout.trim()),
    gid: Number((await run("id", ["-g", "postgres"])).stdout.trim()),
  }));
  chownSync(dir, ids.uid, ids.gid);
  chmodSync(dir, 0o700);
  let running = false;
  cleanup(async () => {
    if (running)
      await asPostgres([`${PG_BIN}/pg_ctl`, "-D", data, "-m", "immediate", "-w", "stop"]).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  });
  await asPostgres([`${PG_BIN}/initdb`, "-D", data, "-U", "root", "-A", "trust", "--no-sync", "-E", "UTF8"]);
  const port = await freePort();
  const options = [
    `-p ${port}`,
    "-c listen_addresses=127.0.0.1",
    `-c unix_socket_directories=${dir}`,
    "-c fsync=off",
    "-c full_page_writes=off",
    "-c max_connections=50",
  ].join(" ");
  const cluster: PgCluster = {
    port,
    url: `postgres://root@127.0.0.1:${port}/postgres`,
    async start() {
      await asPostgres([
        `${PG_BIN}/pg_ctl`,
        "-D",
        data,
        "-o",
        options,
        "-l",
        join(dir, "log"),
        "-w",
        "start",
      ]);
      running = true;
    },
    async stop() {
      await asPostgres([`${PG_BIN}/pg_ctl`, "-D", data, "-m", "immediate", "-w", "stop"]);
      running = false;
    },
  };
  await cluster.start();
  return cluster;
}
