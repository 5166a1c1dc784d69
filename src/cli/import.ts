// `portcullis import marzban|3x-ui --db … [--server ID] [--dry-run]` (issue 51): brings another panel's
// users, inbounds, hosts and admins over, and keeps their old subscription URLs working. Prints the
// report (counts per kind, what was left out and why); --json prints it as JSON. docs/MIGRATION.md.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import type { Deps } from "../deps.ts";
import { DEFAULT_BATCH, type ImportReport } from "../features/import/import.service.ts";
import { readMarzban } from "../features/import/marzban.repository.ts";
import type { PeerSnapshot } from "../features/import/peer.ts";
import { openSource } from "../features/import/source.repository.ts";
import { readXui } from "../features/import/xui.repository.ts";
import { AppError } from "../lib/errors.ts";
import { isUuid } from "../lib/uuid.ts";
import { CliError, parseOptions } from "./cli-error.ts";
import { openDeps, recordCli } from "./config.ts";

export const usage = `usage: portcullis import marzban --db <SQLite file | postgres://URL | mysql://URL> [--xray-config FILE]
                          [--server ID] [--dry-run] [--json]
       portcullis import 3x-ui --db <x-ui.db> [--server ID] [--dry-run] [--json]

Imports another panel: users (status, limits, usage, expiry, note, Telegram id) with their
credentials unchanged, the inbounds (each becomes a template and an inbound on --server), hosts, and
admins (as operators without a password: set one with \`portcullis admin reset-password\`). Marzban's
and PasarGuard's subscription URLs (/sub/{token}) and 3x-ui's (/sub/{subId}, /json/{subId}) keep
working. Run it again at any time: what is already here is left as it is (docs/MIGRATION.md).

--db            the peer's database: a SQLite file (opened read-only), a postgres:// or a mysql://
                URL (MySQL/MariaDB; mariadb:// too)
--xray-config   Marzban's xray_config.json (default: the one beside a SQLite --db)
--server ID     the Portcullis server the peer's inbounds go to; without it, users only
--dry-run       read and report, write nothing
--batch N       users per transaction (default ${DEFAULT_BATCH})
--json          print the report as JSON
`;

export type ImportContext = {
  deps?: Pick<Deps, "services">;
  write?: (text: string) => void;
  writeError?: (text: string) => void;
  onBatch?: (done: number, total: number) => void | Promise<void>;
};

export async function run(args: string[], context: ImportContext = {}): Promise<number> {
  const write = context.write ?? ((text: string) => process.stdout.write(text));
  const writeError = context.writeError ?? ((text: string) => process.stderr.write(text));
  const [kind, ...rest] = args;
  if (kind !== "marzban" && kind !== "3x-ui") {
    writeError(`portcullis: import what? marzban or 3x-ui\n\n${usage}`);
    return 2;
  }
  const { values } = parseOptions(usage, () =>
    parseArgs({
      args: rest,
      options: {
        db: { type: "string" },
        "xray-config": { type: "string" },
        server: { type: "string" },
        "dry-run": { type: "boolean" },
        batch: { type: "string" },
        json: { type: "boolean" },
      },
      allowPositionals: false,
    }),
  );
  if (values.db === undefined) throw new CliError("--db is required", 2);
  if (values.server !== undefined && !isUuid(values.server)) throw new CliError("--server: a server id", 2);
  const batch = values.batch === undefined ? DEFAULT_BATCH : Number(values.batch);
  if (!Number.isInteger(batch) || batch < 1 || batch > 50_000) throw new CliError("--batch: 1-50000", 2);

  const snapshot = await readSnapshot(kind, values.db, values["xray-config"]);
  const execute = async (deps: Pick<Deps, "services">) => {
    try {
      const report = await deps.services.importer.run(snapshot, {
        dryRun: values["dry-run"] === true,
        serverId: values.server ?? null,
        batchSize: batch,
        onBatch: async (done, total) => {
          if (values.json !== true) writeError(`portcullis: ${done}/${total} users\n`);
          await context.onBatch?.(done, total);
        },
      });
      write(values.json === true ? `${JSON.stringify(report, null, 2)}\n` : describe(report));
      return 0;
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      writeError(`portcullis: ${error.message}\n`);
      return 1;
    }
  };
  if (context.deps !== undefined) return execute(context.deps);
  // On SQLite the WAL is checkpointed by a worker thread, as under `serve`: otherwise every batch's
  // commit pushes the WAL past SQLite's threshold and copies and syncs it on this thread.
  const deps = await openDeps(undefined, undefined, { backgroundCheckpoints: true });
  let exitCode = 1;
  try {
    exitCode = await execute(deps);
    return exitCode;
  } finally {
    if (values["dry-run"] !== true) {
      await recordCli(
        deps,
        `cli.import.${kind === "3x-ui" ? "xui" : kind}`,
        { server_id: values.server ?? "" },
        exitCode,
      );
    }
    await deps.close();
  }
}

async function readSnapshot(
  kind: "marzban" | "3x-ui",
  db: string,
  xrayConfigPath?: string,
): Promise<PeerSnapshot> {
  let source: Awaited<ReturnType<typeof openSource>>;
  try {
    source = await openSource(db);
  } catch (error) {
    if (error instanceof AppError) throw new CliError(error.message);
    throw error;
  }
  try {
    if (kind === "3x-ui") return await readXui(source);
    return await readMarzban(
      source,
      readXrayConfig(source.dialect === "sqlite" ? db : undefined, xrayConfigPath),
    );
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(`cannot read the ${kind} database: ${(error as Error).message}`);
  } finally {
    await source.close();
  }
}

function readXrayConfig(sqlitePath: string | undefined, given: string | undefined): unknown {
  const path =
    given ??
    (sqlitePath === undefined
      ? undefined
      : join(dirname(sqlitePath.replace(/^sqlite:/, "")), "xray_config.json"));
  if (path === undefined || (given === undefined && !existsSync(path))) return null;
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new CliError(`--xray-config: cannot read ${path}: ${(error as Error).message}`);
  }
}

function describe(report: ImportReport): string {
  const verb = report.dry_run ? "would create" : "created";
  const line = (kind: string, t: { found: number; created: number; already: number; left_out: number }) =>
    `  ${kind.padEnd(18)} found ${t.found}, ${verb} ${t.created}, already here ${t.already}, left out ${t.left_out}\n`;
  let text = `import from ${report.source}${report.dry_run ? " (dry run: nothing written)" : ""}\n`;
  text += line("users", report.users);
  text += line("grants", report.grants);
  text += line("inbounds", report.inbounds);
  text += `  ${"templates".padEnd(18)} ${verb} ${report.templates.created}, already here ${report.templates.already}\n`;
  text += line("hosts", report.hosts);
  text += line("admins", report.admins);
  text += line("old URL keys", report.subscription_urls.links);
  text += `  ${"signing secret".padEnd(18)} ${report.subscription_urls.secret}\n`;
  const reasons = Object.entries(report.left_out).filter(([, n]) => n > 0);
  if (reasons.length > 0) {
    text += "left out or changed:\n";
    for (const [reason, n] of reasons) text += `  ${String(n).padStart(7)}  ${reason}\n`;
  }
  text += `${report.duration_ms} ms\n`;
  return text;
}
