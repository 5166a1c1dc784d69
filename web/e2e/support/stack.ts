// What the browser tests run against: a real `portcullis serve` (its own SQLite directory, the
// starter templates installed by the CLI, a fast reconcile loop) and, for the flows that need one,
// a real V2Ray core with its gRPC API. Everything is removed by the returned stop().
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type PortcullisProcess,
  sharedStore,
  startPortcullis,
} from "../../../test/support/portcullis-process.ts";
import { CleanupStack, startV2rayServer, type V2rayServer } from "../../../test/support/v2ray.ts";

export const ADMIN = { username: "admin", password: "correct horse battery" } as const;
const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

export type Stack = {
  portcullis: PortcullisProcess;
  core: V2rayServer | undefined;
  cleanup: CleanupStack;
  /** An authenticated API call that throws unless the status is 2xx. */
  api<T>(method: string, path: string, body?: unknown): Promise<T>;
  stop(): Promise<void>;
};

export async function startStack(options: {
  core: boolean;
  env?: Record<string, string>;
  /** false: a fresh install with no templates (the dashboard offers the starters then). */
  starters?: boolean;
}): Promise<Stack> {
  const cleanup = new CleanupStack();
  try {
    const store = await sharedStore(cleanup.add);
    const portcullis = await startPortcullis(cleanup.add, store, {
      PORTCULLIS_RECONCILE_INTERVAL_MS: "500",
      PORTCULLIS_TRAFFIC_INTERVAL_MS: "1000",
      ...options.env,
    });
    const installed =
      options.starters === false
        ? { status: 0, stderr: "" }
        : spawnSync(
            process.execPath,
            ["--import", "tsx", join(ROOT, "src/main.ts"), "templates", "install-starters"],
            { cwd: ROOT, env: { ...process.env, ...store.env, LOG_LEVEL: "warn" }, encoding: "utf8" },
          );
    if (installed.status !== 0) throw new Error(`install-starters failed: ${installed.stderr}`);
    const core = options.core ? await startV2rayServer(cleanup.add) : undefined;
    const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const response = await portcullis.api(method, path, body);
      const json = await response.json();
      if (response.status >= 300)
        throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
      return json as T;
    };
    return { portcullis, core, cleanup, api, stop: () => cleanup.run() };
  } catch (error) {
    await cleanup.run();
    throw error;
  }
}
