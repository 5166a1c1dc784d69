// A throwaway PostgreSQL database for one benchmark run, created through an admin URL (BENCH_PG_URL,
// default postgres://root@127.0.0.1:5432/postgres) and dropped afterwards, connections and all.
import { randomBytes } from "node:crypto";
import pg from "pg";

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
