// `portcullis access grant-bulk --server ID --inbound ID [--level N] [USER_ID…]`: grants one inbound
// to many existing users through the same service as POST …/users/bulk. User ids come from the
// arguments or, without any, from stdin (one per line); more than 10,000 go in several batches.
import { parseArgs } from "node:util";
import type { Deps } from "../deps.ts";
import type { BulkGrantResult } from "../features/access/access.schemas.ts";
import type { BulkGrants } from "../features/access/bulk-grant.ts";
import { AppError } from "../lib/errors.ts";
import { chunks } from "../lib/limiter.ts";
import { isUuid } from "../lib/uuid.ts";
import { openDeps, recordCli } from "./config.ts";

export const usage = `usage: portcullis access grant-bulk --server ID --inbound ID [--level N] [USER_ID…]

Grants one inbound to many existing users, as POST /api/servers/{id}/inbounds/{id}/users/bulk does:
stored in one transaction per 10,000 users, then pushed to the core. User ids come from the
arguments or, without any, from stdin (whitespace-separated). Prints one line per unknown user and
a summary.

--server ID    the server's id
--inbound ID   the inbound's id on that server
--level N      the users' level on the core, 0-255 (default 0)
`;
const BATCH = 10_000;

export type CliContext = {
  /** Use these services instead of opening the configured database (tests). */
  deps?: Pick<Deps, "services">;
  stdin?: AsyncIterable<string | Buffer>;
  write?: (text: string) => void;
  writeError?: (text: string) => void;
};

type Request = { serverId: string; inboundId: string; level: number; userIds: string[] };

export async function run(args: string[], context: CliContext = {}): Promise<number> {
  const write = context.write ?? ((text: string) => process.stdout.write(text));
  const writeError = context.writeError ?? ((text: string) => process.stderr.write(text));
  const request = await parseRequest(args, context.stdin ?? process.stdin);
  if (typeof request === "string") {
    writeError(`${request}\n\n${usage}`);
    return 2;
  }
  const execute = async (bulk: BulkGrants) => {
    try {
      return await grantAll(bulk, request, write);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      writeError(`portcullis: ${error.message}\n`);
      for (const detail of error.details ?? []) writeError(`  ${detail.path}: ${detail.message}\n`);
      return 1;
    }
  };
  if (context.deps !== undefined) return execute(context.deps.services.bulkGrants);
  const deps = await openDeps();
  let exitCode = 1;
  try {
    exitCode = await execute(deps.services.bulkGrants);
    return exitCode;
  } finally {
    const targets = {
      server_id: request.serverId,
      inbound_id: request.inboundId,
      users: String(request.userIds.length),
    };
    await recordCli(deps, "cli.access.grant_bulk", targets, exitCode);
    await deps.close();
  }
}

async function parseRequest(
  args: string[],
  stdin: AsyncIterable<string | Buffer>,
): Promise<Request | string> {
  const [action, ...rest] = args;
  if (action !== "grant-bulk") return "unknown action";
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(rest);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  const { server, inbound, level } = parsed.values;
  if (server === undefined || inbound === undefined) return "--server and --inbound are required";
  const levelNumber = Number(level ?? "0");
  if (!Number.isInteger(levelNumber) || levelNumber < 0 || levelNumber > 255) return "--level is 0-255";
  const userIds = parsed.positionals.length > 0 ? parsed.positionals : await readLines(stdin);
  const bad = userIds.find((id) => !isUuid(id));
  if (bad !== undefined) return `not a user id: ${bad}`;
  if (userIds.length === 0) return "no user ids given";
  return { serverId: server, inboundId: inbound, level: levelNumber, userIds };
}

function parseOptions(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    options: { server: { type: "string" }, inbound: { type: "string" }, level: { type: "string" } },
  });
}

async function readLines(stdin: AsyncIterable<string | Buffer>): Promise<string[]> {
  let text = "";
  for await (const chunk of stdin) text += chunk.toString();
  return text
    .split(/\s+/)
    .map((line) => line.trim())
    .filter((line) => line !== "");
}

async function grantAll(bulk: BulkGrants, request: Request, write: (text: string) => void): Promise<number> {
  const totals = { granted: 0, synced: 0, pending: 0, error: 0, already: 0, unknown: 0 };
  for (const userIds of chunks(request.userIds, BATCH)) {
    const result: BulkGrantResult = await bulk.grant(request.serverId, request.inboundId, {
      user_ids: userIds,
      level: request.level,
    });
    totals.granted += result.granted;
    totals.synced += result.sync.synced;
    totals.pending += result.sync.pending;
    totals.error += result.sync.error;
    totals.already += result.already_granted.length;
    totals.unknown += result.unknown_users.length;
    for (const id of result.unknown_users) write(`unknown user ${id}\n`);
  }
  write(
    `granted ${totals.granted} (synced ${totals.synced}, pending ${totals.pending}, error ${totals.error}); ` +
      `already granted ${totals.already}; unknown users ${totals.unknown}\n`,
  );
  return 0;
}
