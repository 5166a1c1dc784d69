// `portcullis plans list|create`: plans (docs/PLANS.md) through the same service and body schema as
// /api/plans, so a bad value names its field as a 400 would.
import { parseArgs } from "node:util";
import type { Deps } from "../deps.ts";
import { PlanCreate } from "../features/plans/plans.schemas.ts";
import { AppError } from "../lib/errors.ts";
import { checkBody } from "../lib/validation.ts";
import { parseOptions } from "./cli-error.ts";
import { openDeps, recordCli } from "./config.ts";
import { bytes } from "./users.ts";

export const usage = `usage: portcullis plans list
       portcullis plans create NAME [--data-limit-gib N] [--reset PERIOD] [--days N]
                                    [--on-hold] [--on-hold-timeout-days N] [--ip-limit N]
                                    [--device-limit N] [--renew-from expiry|now] [--reset-usage] [--group ID]…

list    a header, then one plan per line (tab-separated): name, limit, period, days, groups, id
create  a new plan:
          --data-limit-gib N        traffic limit in GiB (1 GiB = 1024^3 bytes; decimals allowed)
          --reset PERIOD            no_reset, day, week, month, month_rolling or year
          --days N                  days of access (none: never expires)
          --on-hold                 users created from it wait for their first traffic (needs --days)
          --on-hold-timeout-days N  with --on-hold: the clock starts after N days anyway
          --ip-limit N              the users' IP limit (0: unlimited)
          --device-limit N          the users' device limit (0: unlimited)
          --renew-from WHEN         a renewal counts from the current expiry (expiry) or from now
          --reset-usage             a renewal starts used traffic over at 0
          --group ID                a group users join with the plan (repeat for more)
`;

const GIB = 1024 ** 3;
const OPTIONS = {
  "data-limit-gib": { type: "string" },
  reset: { type: "string" },
  days: { type: "string" },
  "on-hold": { type: "boolean" },
  "on-hold-timeout-days": { type: "string" },
  "ip-limit": { type: "string" },
  "device-limit": { type: "string" },
  "renew-from": { type: "string" },
  "reset-usage": { type: "boolean" },
  group: { type: "string", multiple: true },
} as const;

export type CliContext = {
  /** Use these services instead of opening the configured database (tests). */
  deps?: Pick<Deps, "services">;
  write?: (text: string) => void;
  writeError?: (text: string) => void;
};

type Values = ReturnType<typeof parse>["values"];
type Output = { write: (text: string) => void; writeError: (text: string) => void };

function parse(args: string[]) {
  return parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
}

export async function run(args: string[], context: CliContext = {}): Promise<number> {
  const out: Output = {
    write: context.write ?? ((text) => process.stdout.write(text)),
    writeError: context.writeError ?? ((text) => process.stderr.write(text)),
  };
  const [action, ...rest] = args;
  const { values, positionals } = parseOptions(usage, () => parse(rest));
  const fits =
    (action === "list" && positionals.length === 0) || (action === "create" && positionals.length === 1);
  if (!fits) {
    out.writeError(usage);
    return 2;
  }
  const name = positionals[0] ?? "";
  if (context.deps !== undefined) return execute(action, name, values, context.deps, out);
  const deps = await openDeps();
  let exitCode = 1;
  try {
    exitCode = await execute(action, name, values, deps, out);
    return exitCode;
  } finally {
    if (action === "create") await recordCli(deps, "cli.plans.create", { name }, exitCode);
    await deps.close();
  }
}

async function execute(
  action: string | undefined,
  name: string,
  values: Values,
  deps: Pick<Deps, "services">,
  { write, writeError }: Output,
): Promise<number> {
  try {
    if (action === "list") {
      const plans = await deps.services.plans.list();
      write("NAME\tLIMIT\tPERIOD\tDAYS\tGROUPS\tID\n");
      for (const p of plans) {
        const limit = p.data_limit_bytes === null ? "unlimited" : bytes(p.data_limit_bytes);
        const days = p.duration_days === null ? "never" : String(p.duration_days);
        write(`${cell(p.name)}\t${limit}\t${p.data_limit_reset}\t${days}\t${p.group_ids.length}\t${p.id}\n`);
      }
      return 0;
    }
    const body = createBody(name, values);
    checkBody(PlanCreate, body, "options");
    const plan = await deps.services.plans.create(body as PlanCreate);
    write(`created ${cell(plan.name)}: ${plan.id}\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    writeError(`portcullis: ${error.message}\n`);
    for (const detail of error.details ?? []) writeError(`  ${detail.path}: ${detail.message}\n`);
    return 1;
  }
}

function createBody(name: string, values: Values): Record<string, unknown> {
  const gib = numberOf(values["data-limit-gib"]);
  const optional = (key: string, value: unknown) => (value === undefined ? {} : { [key]: value });
  return {
    name,
    ...optional("data_limit_bytes", typeof gib === "number" ? Math.round(gib * GIB) : gib),
    ...optional("data_limit_reset", values.reset),
    ...optional("duration_days", numberOf(values.days)),
    ...optional("start_on_hold", values["on-hold"]),
    ...optional("on_hold_timeout_days", numberOf(values["on-hold-timeout-days"])),
    ...optional("ip_limit", numberOf(values["ip-limit"])),
    ...optional("device_limit", numberOf(values["device-limit"])),
    ...optional("renew_from", values["renew-from"]),
    ...optional("reset_usage", values["reset-usage"]),
    ...optional("group_ids", values.group),
  };
}

/** A number from an option, or the text itself (the schema then says what is wrong with it). */
function numberOf(text: string | undefined): number | string | undefined {
  if (text === undefined) return undefined;
  return /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
}

/** One line of text: names may not hold control characters, but say so plainly if one ever does. */
const cell = (text: string) => text.replace(/[\p{Cc}\u2028\u2029\u0085]/gu, " ");
