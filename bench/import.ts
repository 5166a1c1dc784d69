// `npm run bench:import [-- --users 100000 --dialect sqlite|postgres|both]` (issue 51): a Marzban
// fixture of N users (test/support/peer-fixtures.ts) imported into a scratch database, with a real
// V2Ray core registered as the server the four inbounds go to (the grants are stored pending; pushing
// them is the reconciler's, measured by bench:convergence). Times reading the fixture and the whole
// import (inbounds, hosts, users, grants, old URL keys, admins); the acceptance is < 60 s at 100,000.
// Also the CPU time of this process (the reader and the importer; on SQLite the database work too) and
// of the PostgreSQL server processes serving the scratch database (read from /proc),
// and the load average at the start and at the end: the machine is shared, and under a load well
// above its two cores the wall time measures the queue more than the import.
// Writes the run between markers in docs/benchmarks/import.md.
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { readMarzban } from "../src/features/import/marzban.repository.ts";
import { openSource } from "../src/features/import/source.repository.ts";
import { MARZBAN_INBOUNDS, marzbanXrayConfig, writeMarzbanSqlite } from "../test/support/peer-fixtures.ts";
import { freePort } from "../test/support/ports.ts";
import { CleanupStack, startV2rayServer, tempDir } from "../test/support/v2ray.ts";
import { openBenchDeps } from "./lib/bench-deps.ts";
import { readThreadCpuSeconds } from "./lib/cpu.ts";
import { describeCode, describeMachine } from "./lib/machine.ts";
import { writeBetweenMarkers } from "./lib/markers.ts";
import { backendCpuSeconds, backendCpuSpent } from "./lib/pg-scratch.ts";

const { values } = parseArgs({
  options: { users: { type: "string", default: "100000" }, dialect: { type: "string", default: "both" } },
});
const n = Number(values.users);
const dialects =
  values.dialect === "both" ? (["sqlite", "postgres"] as const) : [values.dialect as "sqlite" | "postgres"];

const machine = describeMachine([describeCode(process.cwd())]);
const loadNow = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(" ");
const stack = new CleanupStack();
const lines: string[] = [];
try {
  const dir = tempDir(stack.add);
  const dbPath = join(dir, "db.sqlite3");
  let started = performance.now();
  const fixture = writeMarzbanSqlite(dbPath, n);
  const ports: Record<string, number> = {};
  for (const inbound of MARZBAN_INBOUNDS) ports[inbound.tag] = await freePort();
  writeFileSync(join(dir, "xray_config.json"), JSON.stringify(marzbanXrayConfig(ports)));
  console.error(
    `fixture: ${n} users, ${fixture.proxies} proxies in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  const core = await startV2rayServer(stack.add);
  for (const dialect of dialects) {
    // As `portcullis import` opens it: SQLite's WAL checkpointed by a worker thread.
    const bench = await openBenchDeps(dialect, { backgroundCheckpoints: true });
    try {
      const { services } = bench.deps;
      const server = await services.servers.create({
        name: "bench",
        hostname: "127.0.0.1",
        grpc_port: core.apiPort,
      });
      const database =
        bench.databaseUrl === undefined ? undefined : new URL(bench.databaseUrl).pathname.slice(1);
      const serverBefore = database === undefined ? undefined : await backendCpuSeconds(database);
      started = performance.now();
      const cpu = process.cpuUsage();
      const mainBefore = readThreadCpuSeconds(process.pid, process.pid);
      const source = await openSource(dbPath);
      const snapshot = await readMarzban(source, marzbanXrayConfig(ports)).finally(() => source.close());
      const readS = (performance.now() - started) / 1000;
      const report = await services.importer.run(snapshot, { dryRun: false, serverId: server.id });
      const totalS = (performance.now() - started) / 1000;
      const used = process.cpuUsage(cpu);
      const cpuS = (used.user + used.system) / 1e6;
      const mainS = readThreadCpuSeconds(process.pid, process.pid) - mainBefore;
      const serverS =
        database === undefined || serverBefore === undefined
          ? undefined
          : backendCpuSpent(serverBefore, await backendCpuSeconds(database));
      // The imported inbounds are removed from the shared core before the next dialect adds its own.
      for (const inbound of await services.inbounds.list(server.id))
        await services.inbounds.delete(server.id, inbound.id);
      const line = `| ${dialect} | ${n.toLocaleString("en")} | ${report.users.created.toLocaleString("en")} | ${report.grants.created.toLocaleString("en")} | ${readS.toFixed(1)} s | ${totalS.toFixed(1)} s | ${cpuS.toFixed(1)} s (main thread ${mainS.toFixed(1)} s) | ${serverS === undefined ? "in this process" : `${serverS.toFixed(1)} s`} | ${totalS < 60 ? "yes" : "no"} | ${loadNow()} |`;
      console.error(line);
      lines.push(line);
    } finally {
      await bench.close();
    }
  }
  const markdown = [
    ...machine.map((line) => `- ${line}`),
    "",
    "| dialect | users | users imported | grants imported | read | whole import | CPU of this process | CPU of the PostgreSQL server | < 60 s | load average after it |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ...lines,
  ].join("\n");
  if (n >= 100_000 && dialects.length === 2)
    writeBetweenMarkers("docs/benchmarks/import.md", "import-run", markdown);
  console.log(markdown);
} finally {
  await stack.run();
}
