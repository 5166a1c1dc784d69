// `portcullis groups list|create|add-inbound|members`: groups of inbounds (docs/GROUPS.md) through the
// same service as /api/groups, so a member's grants reach the cores exactly as over HTTP.
import { parseArgs } from "node:util";
import type { Deps } from "../deps.ts";
import type { GroupsService } from "../features/groups/groups.service.ts";
import { AppError, NotFoundError } from "../lib/errors.ts";
import { isUuid } from "../lib/uuid.ts";
import { openDeps, recordCli } from "./config.ts";

export const usage = `usage: portcullis groups list
       portcullis groups create NAME [--inbound ID]…
       portcullis groups add-inbound GROUP INBOUND_ID…
       portcullis groups members GROUP [--add USER_ID]… [--remove USER_ID]…

GROUP is a group's id or name. Every change grants or revokes on the cores at once, as the API does.

list         a header, then one group per line: name, inbounds, members, id (tab-separated)
create       a new group, optionally with inbounds (server_inbounds ids)
add-inbound  add inbounds (a new server's, say) to the group: every member gets them
members      without options the members (id, name, status; tab-separated); with --add/--remove
             the users join or leave, then a summary
`;

export type CliContext = {
  /** Use these services instead of opening the configured database (tests). */
  deps?: Pick<Deps, "services">;
  write?: (text: string) => void;
  writeError?: (text: string) => void;
};

type Output = { write: (text: string) => void; writeError: (text: string) => void };
type Parsed = { action: string; positionals: string[]; inbound: string[]; add: string[]; remove: string[] };

export async function run(args: string[], context: CliContext = {}): Promise<number> {
  const out: Output = {
    write: context.write ?? ((text) => process.stdout.write(text)),
    writeError: context.writeError ?? ((text) => process.stderr.write(text)),
  };
  const parsed = parse(args);
  if (typeof parsed === "string") {
    out.writeError(`${parsed}\n\n${usage}`);
    return 2;
  }
  if (context.deps !== undefined) return execute(parsed, context.deps.services.groups, out);
  const deps = await openDeps();
  let exitCode = 1;
  try {
    exitCode = await execute(parsed, deps.services.groups, out);
    return exitCode;
  } finally {
    const changes = parsed.action !== "list" && !(parsed.action === "members" && isReadOnly(parsed));
    const targets = { action: parsed.action, group: parsed.positionals[0] ?? "" };
    if (changes) await recordCli(deps, `cli.groups.${parsed.action.replace("-", "_")}`, targets, exitCode);
    await deps.close();
  }
}

function isReadOnly(parsed: Parsed): boolean {
  return parsed.add.length === 0 && parsed.remove.length === 0;
}

function parse(args: string[]): Parsed | string {
  const [action, ...rest] = args;
  let values: { inbound?: string[]; add?: string[]; remove?: string[] };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        inbound: { type: "string", multiple: true },
        add: { type: "string", multiple: true },
        remove: { type: "string", multiple: true },
      },
    }));
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  const parsed = {
    action: action ?? "",
    positionals,
    inbound: values.inbound ?? [],
    add: values.add ?? [],
    remove: values.remove ?? [],
  };
  const ids = [...parsed.inbound, ...parsed.add, ...parsed.remove];
  if (action === "add-inbound") ids.push(...positionals.slice(1));
  const bad = ids.find((id) => !isUuid(id));
  if (bad !== undefined) return `not an id: ${bad}`;
  const counts: Record<string, (n: number) => boolean> = {
    list: (n) => n === 0,
    create: (n) => n === 1,
    "add-inbound": (n) => n >= 2,
    members: (n) => n === 1,
  };
  const fits = counts[parsed.action];
  if (fits === undefined) return "unknown action";
  if (!fits(positionals.length)) return `wrong arguments for ${parsed.action}`;
  return parsed;
}

async function execute(parsed: Parsed, groups: GroupsService, out: Output): Promise<number> {
  try {
    await act(parsed, groups, out.write);
    return 0;
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    out.writeError(`portcullis: ${error.message}\n`);
    for (const detail of error.details ?? []) out.writeError(`  ${detail.path}: ${detail.message}\n`);
    return 1;
  }
}

async function act(parsed: Parsed, groups: GroupsService, write: (text: string) => void): Promise<void> {
  const [first = "", ...more] = parsed.positionals;
  if (parsed.action === "list") {
    const all = await groups.list();
    if (all.length > 0) write("NAME\tINBOUNDS\tMEMBERS\tID\n");
    for (const g of all) write(`${g.name}\t${g.inbound_ids.length}\t${g.member_count}\t${g.id}\n`);
    return;
  }
  if (parsed.action === "create") {
    const group = await groups.create({ name: first, inbound_ids: parsed.inbound });
    write(`created ${group.name} (${group.inbound_ids.length} inbounds) ${group.id}\n`);
    return;
  }
  const id = await groupId(groups, first);
  if (parsed.action === "add-inbound") {
    const result = await groups.addInbounds(id, more);
    for (const r of result.inbounds) {
      const { synced, pending, error } = r.sync;
      write(
        `${r.server_inbound_id}: granted ${r.granted} (synced ${synced}, pending ${pending}, error ${error})\n`,
      );
    }
    return;
  }
  if (isReadOnly(parsed)) {
    write("ID\tNAME\tSTATUS\n");
    for (let after: string | undefined; ; ) {
      const page = await groups.listMembers(id, { limit: 500, ...(after === undefined ? {} : { after }) });
      for (const m of page.items) write(`${m.id}\t${m.name}\t${m.status}\n`);
      if (page.next_cursor === null) return;
      after = page.next_cursor;
    }
  }
  if (parsed.add.length > 0) {
    const result = await groups.addMembers(id, { user_ids: parsed.add });
    write(`added ${result.changed} of ${result.matched} users; granted ${sum(result.inbounds, "granted")}\n`);
  }
  if (parsed.remove.length > 0) {
    const result = await groups.removeMembers(id, { user_ids: parsed.remove });
    write(
      `removed ${result.changed} of ${result.matched} users; revoked ${sum(result.inbounds, "revoked")}\n`,
    );
  }
}

function sum(rows: readonly { granted: number; revoked: number }[], key: "granted" | "revoked"): number {
  return rows.reduce((total, row) => total + row[key], 0);
}

/** A group by id, or by its exact name. */
async function groupId(groups: GroupsService, ref: string): Promise<string> {
  if (isUuid(ref)) return ref.toLowerCase();
  const found = (await groups.list()).find((g) => g.name === ref);
  if (found === undefined) throw new NotFoundError("group", ref);
  return found.id;
}
