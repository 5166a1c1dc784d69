// Entry point: `portcullis serve` (the default) or a CLI command. Commands load lazily so the
// CLI starts fast and `lobby` needs no database.
export {};

const commands: Record<string, () => Promise<{ run: (args: string[]) => Promise<number> }>> = {
  serve: () => import("./cli/serve.ts"),
  migrate: () => import("./cli/migrate.ts"),
  admin: () => import("./cli/admin.ts"),
  lobby: () => import("./cli/lobby.ts"),
  templates: () => import("./cli/templates.ts"),
  access: () => import("./cli/access.ts"),
};

const [name = "serve", ...args] = process.argv.slice(2);
const load = commands[name];
if (load === undefined) {
  process.stderr.write(`unknown command: ${name}\ncommands: ${Object.keys(commands).join(", ")}\n`);
  process.exitCode = 2;
} else {
  const command = await load();
  process.exitCode = await command.run(args);
}
