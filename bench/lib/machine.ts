// Lines describing the machine, the tools and the code a benchmark ran with, for its report: numbers
// without the hardware, the versions, the commit and the load at the start mean little.
import { execFileSync } from "node:child_process";
import { cpus, loadavg, release, totalmem } from "node:os";

function versionOf(command: string, args: string[]): string {
  try {
    const text = execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    return text.split("\n")[0]?.trim() ?? "unknown";
  } catch (error) {
    // wrk prints its version on stdout and exits 1
    const stdout = (error as { stdout?: string }).stdout ?? "";
    return stdout.split("\n")[0]?.trim() || "unknown";
  }
}

/** The code that ran: the commit, and whether src/ differed from it (a benchmark runs the working tree). */
export function describeCode(root: string): string {
  const git = (...args: string[]) =>
    execFileSync("git", ["-C", root, ...args], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  try {
    const changed = git("status", "--porcelain", "--", "src").split("\n").filter(Boolean).length;
    const dirty = changed === 0 ? "" : ` + uncommitted changes to ${changed} file(s) under src/`;
    return `code: commit ${git("rev-parse", "--short", "HEAD")}${dirty}`;
  } catch {
    return "code: not a git checkout";
  }
}

export function describeMachine(extra: string[] = []): string[] {
  const cpuList = cpus();
  const model = cpuList[0]?.model.trim() ?? "unknown CPU";
  const memoryGiB = (totalmem() / 1024 ** 3).toFixed(0);
  const load = loadavg()
    .map((value) => value.toFixed(2))
    .join(" ");
  return [
    `${cpuList.length} × ${model}, ${memoryGiB} GiB RAM, Linux ${release()}`,
    `Node ${process.version}; ${versionOf("wrk", ["--version"]).replace(/ Copyright.*$/, "")}`,
    ...extra,
    `load average at start: ${load}`,
  ];
}
