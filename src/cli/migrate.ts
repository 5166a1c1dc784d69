// `portcullis migrate`: apply pending migrations and exit (createDeps migrates).
import { createDeps } from "../deps.ts";
import { loadConfigOrExit } from "./config.ts";

export async function run(_args: string[]): Promise<number> {
  const deps = await createDeps(loadConfigOrExit());
  await deps.close();
  process.stdout.write("database is up to date\n");
  return 0;
}
