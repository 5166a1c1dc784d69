// A throwaway PostgreSQL database for one benchmark run, created through an admin URL (BENCH_PG_URL,
// default postgres://root@127.0.0.1:5432/postgres) and dropped afterwards, connections and all.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { readCpuSeconds } from "./cpu.ts";

export const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? "postgres://root@127.0.0.1:5432/postgres";

export type ScratchDatabase = { name: string; url: string; version: string; drop(): Promise<void> };

async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export async function createScratchDatabase(prefix: string): Promise<ScratchDatabase> {
  const name = `${prefix}_${randomBytes(4).toString("hex")}`;
  const version = await withAdmin(async (client) => {
    await client.query(`CREATE DATABASE ${name}`);
    const result = await client.query<{ server_version: string }>("SHOW server_version");
    return result.rows[0]?.server_version ?? "unknown";
  });
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    version,
    drop: () =>
      withAdmin(async (client) => void (await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))),
  };
}

/**
 * CPU seconds (utime + stime, from /proc) of the PostgreSQL server processes connected to `name`
 * now, by pid: read before and after a window, the difference is the server's own work for the
 * benchmark, which the benchmark's own process CPU leaves out. The server must run on this machine.
 */
export async function backendCpuSeconds(name: string): Promise<Map<number, number>> {
  const pids = await withAdmin(async (client) => {
    const result = await client.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'",
      [name],
    );
    return result.rows.map((row) => row.pid);
  });
  const seconds = new Map<number, number>();
  for (const pid of pids) {
    try {
      seconds.set(pid, readCpuSeconds(pid));
    } catch {
      // the backend ended between the query and the read
    }
  }
  return seconds;
}

/** What the backends of `after` spent since `before` (a backend absent before counts from zero). */
export function backendCpuSpent(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0);
  return total;
}
