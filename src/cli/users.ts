// `portcullis users list|create|show|grant`: users from the server's shell, through the same services
// and the same body schemas as /api/users and /api/servers/{id}/inbounds/{id}/users (no SQL here).
// State-changing commands (create, grant) leave an audit entry with the CLI as the actor.
import { parseArgs } from "node:util";
import type { Deps } from "../deps.ts";
import { GrantCreate } from "../features/access/access.schemas.ts";
import { type User, UserCreate } from "../features/users/users.schemas.ts";
import { AppError, ValidationError } from "../lib/errors.ts";
import { checkBody } from "../lib/validation.ts";
import { parseOptions } from "./cli-error.ts";
import { openDeps, recordCli } from "./config.ts";

export const usage = `usage: portcullis users list [--search TEXT] [--page N] [--per-page N]
       portcullis users create --name NAME [--data-limit-gib N] [--reset PERIOD] [--expire-at TIME]
                               [--comment TEXT]
       portcullis users show USER_ID
       portcullis users grant USER_ID --server ID --inbound ID [--level N]

list     a header, then one user per line (tab-separated): name, status, used, limit, expires, id;
         --search matches a name substring, a telegram_id or a user id (at most 50 users)
create   add a user, as POST /api/users; prints the user's id and subscription URL
         --data-limit-gib N  traffic limit in GiB (1 GiB = 1024^3 bytes; decimals allowed)
         --reset PERIOD      no_reset, day, week, month or year (when used traffic starts over)
         --expire-at TIME    ISO 8601 date-time, e.g. 2027-01-31T00:00:00Z
show     one user's fields, then their grants (server, inbound, sync state)
grant    grant the user an inbound, as POST /api/servers/{id}/inbounds/{id}/users; prints the grant's
         sync state (synced once the core has the user)
`;

const GIB = 1024 ** 3;

export type CliContext = {
  /** Use these services instead of opening the configured database (tests). */
  deps?: Pick<Deps, "services">;
  write?: (text: string) => void;
  writeError?: (text: string) => void;
};

type Output = { write: (text: string) => void; writeError: (text: string) => void };

const OPTIONS = {
  search: { type: "string" },
  page: { type: "string" },
  "per-page": { type: "string" },
  name: { type: "string" },
  "data-limit-gib": { type: "string" },
  reset: { type: "string" },
  "expire-at": { type: "string" },
  comment: { type: "string" },
  server: { type: "string" },
  inbound: { type: "string" },
  level: { type: "string" },
} as const;

type Values = ReturnType<typeof parse>["values"];

function parse(args: string[]) {
  return parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
}

const ACTIONS = ["list", "create", "show", "grant"] as const;
type Action = (typeof ACTIONS)[number];
const isAction = (value: string | undefined): value is Action => ACTIONS.includes(value as Action);

export async function run(args: string[], context: CliContext = {}): Promise<number> {
  const out: Output = {
    write: context.write ?? ((text) => process.stdout.write(text)),
    writeError: context.writeError ?? ((text) => process.stderr.write(text)),
  };
  const [action, ...rest] = args;
  const { values, positionals } = parseOptions(usage, () => parse(rest));
  const wantsId = action === "show" || action === "grant";
  if (!isAction(action) || positionals.length !== (wantsId ? 1 : 0)) {
    out.writeError(usage);
    return 2;
  }
  const userId = positionals[0];
  if (context.deps !== undefined) return execute(action, values, userId, context.deps, out);
  const deps = await openDeps();
  let exitCode = 1;
  try {
    exitCode = await execute(action, values, userId, deps, out);
    return exitCode;
  } finally {
    if (action === "create") await recordCli(deps, "cli.users.create", { name: values.name ?? "" }, exitCode);
    if (action === "grant") {
      const targets = {
        user_id: userId ?? "",
        server_id: values.server ?? "",
        inbound_id: values.inbound ?? "",
      };
      await recordCli(deps, "cli.users.grant", targets, exitCode);
    }
    await deps.close();
  }
}

async function execute(
  action: Action,
  values: Values,
  userId: string | undefined,
  deps: Pick<Deps, "services">,
  { write, writeError }: Output,
): Promise<number> {
  try {
    if (action === "list") return await list(deps, values, write);
    if (action === "create") return await create(deps, values, write);
    if (action === "show") return await show(deps, userId ?? "", write);
    return await grant(deps, userId ?? "", values, write);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    writeError(`portcullis: ${error.message}\n`);
    for (const detail of error.details ?? []) writeError(`  ${detail.path}: ${detail.message}\n`);
    return 1;
  }
}

/** A whole number from an option, or the text itself (the schema then says what is wrong with it). */
function numberOf(text: string | undefined): number | string | undefined {
  if (text === undefined) return undefined;
  return /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
}

/** Bytes in IEC units, as the dashboard shows them: 0 B, 512 B, 1.5 GiB. */
export function bytes(value: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let amount = value;
  let unit = 0;
  while (Math.abs(amount) >= 1024 && unit < units.length - 1) {
    amount /= 1024;
    unit++;
  }
  return unit === 0 ? `${amount} B` : `${amount.toFixed(amount >= 100 ? 0 : 1)} ${units[unit]}`;
}

/** One line of text: names may hold tabs, line breaks or other control characters. */
const cell = (text: string) => text.replace(/[\p{Cc}\u2028\u2029\u0085]/gu, " ");

function row(user: User): string {
  const limit = user.data_limit_bytes === null ? "unlimited" : bytes(user.data_limit_bytes);
  const expires = user.expire_at ?? "never";
  return [cell(user.name), user.status, bytes(user.used_bytes), limit, expires, user.id].join("\t");
}

async function list(deps: Pick<Deps, "services">, values: Values, write: (text: string) => void) {
  const users = deps.services.users;
  let shown: User[];
  let footer: string;
  if (values.search !== undefined) {
    const query = { q: values.search };
    checkBody({ ...SEARCH_SCHEMA }, query, "--search");
    shown = await users.search(values.search);
    footer = `${shown.length} matching`;
  } else {
    const query = { page: numberOf(values.page) ?? 1, per_page: numberOf(values["per-page"]) ?? 50 };
    checkBody(PAGE_SCHEMA, query, "options");
    const page = await users.list(query as { page: number; per_page: number });
    shown = page.items;
    footer = `page ${page.page}: ${shown.length} of ${page.total} users${page.next_cursor === null ? "" : "; --page for more"}`;
  }
  write("NAME\tSTATUS\tUSED\tLIMIT\tEXPIRES\tID\n");
  for (const user of shown) write(`${row(user)}\n`);
  write(`${footer}\n`);
  return 0;
}

const SEARCH_SCHEMA = {
  type: "object",
  properties: { q: { type: "string", minLength: 1, maxLength: 128 } },
  required: ["q"],
  additionalProperties: false,
} as const;
const PAGE_SCHEMA = {
  type: "object",
  properties: {
    page: { type: "integer", minimum: 1, maximum: 1_000_000 },
    per_page: { type: "integer", minimum: 1, maximum: 500 },
  },
  additionalProperties: false,
} as const;

async function create(deps: Pick<Deps, "services">, values: Values, write: (text: string) => void) {
  const gib = numberOf(values["data-limit-gib"]);
  const body: Record<string, unknown> = {
    ...(values.name === undefined ? {} : { name: values.name }),
    ...(values.comment === undefined ? {} : { comment: values.comment }),
    ...(gib === undefined ? {} : { data_limit_bytes: typeof gib === "number" ? Math.round(gib * GIB) : gib }),
    ...(values.reset === undefined ? {} : { data_limit_reset: values.reset }),
    ...(values["expire-at"] === undefined ? {} : { expire_at: values["expire-at"] }),
  };
  checkBody(UserCreate, body, "options");
  const user = await deps.services.users.create(body as UserCreate);
  write(`created ${cell(user.name)}: ${user.id}\nsubscription: ${user.subscription_url}\n`);
  return 0;
}

async function show(deps: Pick<Deps, "services">, id: string, write: (text: string) => void) {
  checkBody(ID_SCHEMA, { user_id: id }, "arguments");
  const user = await deps.services.users.get(id);
  const fields: [string, string][] = [
    ["id", user.id],
    ["name", cell(user.name)],
    ["status", user.status],
    ["used", `${bytes(user.used_bytes)} (${user.used_bytes} B)`],
    [
      "limit",
      user.data_limit_bytes === null
        ? "unlimited"
        : `${bytes(user.data_limit_bytes)} (${user.data_limit_bytes} B)`,
    ],
    ["reset", user.data_limit_reset],
    ["expires", user.expire_at ?? "never"],
    ["comment", cell(user.comment ?? "")],
    ["subscription", user.subscription_url],
    ["created", user.created_at],
  ];
  for (const [key, value] of fields) write(`${`${key}:`.padEnd(14)}${value}\n`);
  const grants = await deps.services.access.listForUser(id, true);
  write(`grants:       ${grants.length}\n`);
  if (grants.length > 0) write("SERVER\tINBOUND\tSYNC\tERROR\n");
  for (const g of grants) {
    const where = [cell(g.server_name ?? ""), cell(g.inbound_tag ?? g.server_inbound_id)];
    write(`${[...where, g.sync_state, cell(g.sync_error ?? "")].join("\t")}\n`);
  }
  return 0;
}

async function grant(
  deps: Pick<Deps, "services">,
  userId: string,
  values: Values,
  write: (text: string) => void,
) {
  if (values.server === undefined || values.inbound === undefined) {
    throw new ValidationError("--server and --inbound are required");
  }
  const body: Record<string, unknown> = {
    user_id: userId,
    ...(values.level === undefined ? {} : { level: numberOf(values.level) }),
  };
  checkBody(ID_SCHEMA, { user_id: userId }, "arguments");
  checkBody(GrantCreate, body, "options");
  const ids = { server: values.server, inbound: values.inbound };
  checkBody(IDS_SCHEMA, ids, "options");
  const record = await deps.services.access.grant(ids.server, ids.inbound, body as GrantCreate);
  const error = record.sync_error === null ? "" : ` (${cell(record.sync_error)})`;
  write(`granted: ${record.id}\nsync: ${record.sync_state}${error}\n`);
  return 0;
}

const IDS_SCHEMA = {
  type: "object",
  properties: {
    server: { type: "string", format: "uuid" },
    inbound: { type: "string", format: "uuid" },
  },
  required: ["server", "inbound"],
  additionalProperties: false,
} as const;
const ID_SCHEMA = {
  type: "object",
  properties: { user_id: { type: "string", format: "uuid" } },
  required: ["user_id"],
  additionalProperties: false,
} as const;
