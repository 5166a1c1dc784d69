// The service's dependencies on a scratch database for one benchmark run: a temporary DATA_DIR (SQLite)
// or a throwaway PostgreSQL database (pg-scratch.ts), a fixed secret key, a silent logger. close()
// stops them and removes both (the PostgreSQL database is kept, and named, with BENCH_KEEP=1).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { loadConfig } from "../../src/config/config.ts";
import { createDeps, type Deps, type DepsOptions } from "../../src/deps.ts";
import { createScratchDatabase } from "./pg-scratch.ts";

export type BenchDeps = {
  deps: Deps;
  /** The scratch PostgreSQL database's URL; undefined on SQLite. */
  databaseUrl: string | undefined;
  close(): Promise<void>;
};

export async function openBenchDeps(
  dialect: "sqlite" | "postgres",
  options: DepsOptions = {},
): Promise<BenchDeps> {
  const dataDir = mkdtempSync(join(tmpdir(), "portcullis-bench-"));
  const scratch = dialect === "postgres" ? await createScratchDatabase("portcullis_bench") : undefined;
  const removeAll = async () => {
    rmSync(dataDir, { recursive: true, force: true });
    if (scratch !== undefined && process.env.BENCH_KEEP === "1")
      console.error(`kept database ${scratch.name}`);
    else await scratch?.drop();
  };
  try {
    const config = loadConfig({
      DATA_DIR: dataDir,
      DATABASE_URL: scratch?.url,
      PORTCULLIS_SECRET_KEY: "00".repeat(32),
    });
    const deps = await createDeps(config, { logger: pino({ level: "silent" }), ...options });
    return {
      deps,
      databaseUrl: scratch?.url,
      close: async () => {
        await deps.close();
        await removeAll();
      },
    };
  } catch (error) {
    await removeAll();
    throw error;
  }
}
