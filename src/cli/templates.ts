// `portcullis templates install-starters|list`: install the shipped starter templates (idempotent)
// or list the templates, through the same service as /api/templates.
import type { Deps } from "../deps.ts";
import { installStarters } from "../features/templates/starters.ts";
import type { TemplatesService } from "../features/templates/templates.service.ts";
import { AppError } from "../lib/errors.ts";
import { openDeps, recordCli } from "./config.ts";

export const usage = `usage: portcullis templates install-starters
       portcullis templates list

install-starters  add the shipped starter templates that are missing (idempotent; docs/TEMPLATES.md)
list              a header, then one template per line: name, protocol/network/security, cores, id
                  (tab-separated)
`;

export type CliContext = {
  /** Use these services instead of opening the configured database (tests). */
  deps?: Pick<Deps, "services">;
  write?: (text: string) => void;
  writeError?: (text: string) => void;
};

type Output = { write: (text: string) => void; writeError: (text: string) => void };

export async function run(args: string[], context: CliContext = {}): Promise<number> {
  const out: Output = {
    write: context.write ?? ((text) => process.stdout.write(text)),
    writeError: context.writeError ?? ((text) => process.stderr.write(text)),
  };
  const [action, ...rest] = args;
  if ((action !== "install-starters" && action !== "list") || rest.length > 0) {
    out.writeError(usage);
    return 2;
  }
  if (context.deps !== undefined) return execute(action, context.deps.services.templates, out);
  const deps = await openDeps();
  let exitCode = 1;
  try {
    exitCode = await execute(action, deps.services.templates, out);
    return exitCode;
  } finally {
    if (action === "install-starters") await recordCli(deps, "cli.templates.install_starters", {}, exitCode);
    await deps.close();
  }
}

async function execute(
  action: "install-starters" | "list",
  templates: TemplatesService,
  { write, writeError }: Output,
): Promise<number> {
  try {
    return action === "list" ? await list(templates, write) : await install(templates, write);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    writeError(`portcullis: ${error.message}\n`);
    for (const detail of error.details ?? []) writeError(`  ${detail.path}: ${detail.message}\n`);
    return 1;
  }
}

async function install(templates: TemplatesService, write: (text: string) => void): Promise<number> {
  const outcomes = await installStarters(templates);
  for (const outcome of outcomes) {
    if (outcome.status === "installed") {
      write(`installed ${outcome.name} (cores: ${outcome.supportedCores.join(", ")})\n`);
    } else write(`skipped ${outcome.name}: ${outcome.reason}\n`);
  }
  const installed = outcomes.filter((outcome) => outcome.status === "installed").length;
  write(`${installed} installed, ${outcomes.length - installed} skipped\n`);
  return 0;
}

async function list(templates: TemplatesService, write: (text: string) => void): Promise<number> {
  const all = await templates.list();
  if (all.length > 0) write("NAME\tSHAPE\tCORES\tID\n");
  for (const t of all) {
    const shape = `${t.protocol}/${t.network}/${t.security}`;
    write(`${t.name}\t${shape}\t${t.supported_cores.join(",")}\t${t.id}\n`);
  }
  if (all.length === 0) write("no templates; `portcullis templates install-starters` adds the starters\n");
  return 0;
}
