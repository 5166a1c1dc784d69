// `portcullis admin create|reset-password --username NAME [--role ROLE] [--password-stdin]`: manage
// admin accounts from the server's shell. Without --password-stdin a random password is printed once.
import { parseArgs } from "node:util";
import { AppError } from "../lib/errors.ts";
import { randomPassword } from "../lib/password.ts";
import { ROLES, type Role } from "../lib/roles.ts";
import { parseOptions } from "./cli-error.ts";
import { openDeps, recordCli } from "./config.ts";

export const usage = `usage: portcullis admin create --username NAME [--password-stdin]
       portcullis admin reset-password --username NAME [--password-stdin]

create            add an admin account
reset-password    set a new password for an admin; their login tokens and API keys are revoked

--username NAME   the admin's login name
--password-stdin  read the password from stdin (8 characters or more) instead of generating a random
                  one, which is printed once
`;

const isRole = (value: string): value is Role => (ROLES as readonly string[]).includes(value);

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}

export async function run(args: string[]): Promise<number> {
  const [action, ...rest] = args;
  const { values } = parseOptions(usage, () =>
    parseArgs({
      args: rest,
      options: {
        username: { type: "string" },
        role: { type: "string" },
        "password-stdin": { type: "boolean" },
      },
      strict: true,
    }),
  );
  if ((action !== "create" && action !== "reset-password") || values.username === undefined) {
    process.stderr.write(usage);
    return 2;
  }
  const role = values.role ?? "owner";
  if (!isRole(role) || (action === "reset-password" && values.role !== undefined)) {
    process.stderr.write(`portcullis: --role is one of ${ROLES.join(", ")}, and only for create\n\n${usage}`);
    return 2;
  }
  const password = values["password-stdin"] ? await readStdin() : randomPassword();
  if (password.length < 8) {
    process.stderr.write("portcullis: the password must be at least 8 characters\n");
    return 1;
  }
  const deps = await openDeps();
  let exitCode = 1;
  try {
    if (action === "create") await deps.services.auth.createAdmin(values.username, password, role);
    else await deps.services.auth.resetPassword(values.username, password);
    if (!values["password-stdin"]) process.stdout.write(`password for ${values.username}: ${password}\n`);
    else process.stdout.write(`ok: ${action} ${values.username}${action === "create" ? ` (${role})` : ""}\n`);
    exitCode = 0;
    return 0;
  } catch (error) {
    if (error instanceof AppError) {
      process.stderr.write(`portcullis: ${error.message}\n`);
      return 1;
    }
    throw error;
  } finally {
    const name = action === "create" ? "cli.admin.create" : "cli.admin.reset_password";
    const targets: Record<string, string> = { username: values.username };
    if (action === "create") targets.role = role;
    await recordCli(deps, name, targets, exitCode);
    await deps.close();
  }
}
