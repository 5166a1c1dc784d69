// CPU time a process spent, from /proc/<pid>/stat (Linux): utime + stime of all its threads, in
// clock ticks. Read around a measured window, it gives the server's own cost per request, which
// stays meaningful when the load generator is the bottleneck; requests per second does not.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

let ticksPerSecond: number | undefined;

/** sysconf(_SC_CLK_TCK): 100 on every Linux this runs on, asked once anyway. */
export function clockTicksPerSecond(): number {
  if (ticksPerSecond === undefined) {
    const text = execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim();
    const value = Number(text);
    ticksPerSecond = Number.isInteger(value) && value > 0 ? value : 100;
  }
  return ticksPerSecond;
}

/** utime + stime in seconds (all threads of the process, those that exited included). */
export function readCpuSeconds(pid: number): number {
  return readStatCpu(`/proc/${pid}/stat`);
}

/** utime + stime in seconds of one thread (a task of /proc/<pid>/task; the main thread's tid is the pid). */
export function readThreadCpuSeconds(pid: number, tid: number): number {
  return readStatCpu(`/proc/${pid}/task/${tid}/stat`);
}

function readStatCpu(path: string): number {
  const text = readFileSync(path, "utf8");
  // The command name (field 2) may contain spaces and parentheses: count fields after its last ')'.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // Fields 14 and 15 of the whole line are the 12th and 13th after the name.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error(`unreadable ${path}`);
  return (utime + stime) / clockTicksPerSecond();
}

export type CpuWindow = {
  /** Ends the window: the process's CPU seconds in it, and the wall-clock seconds. */
  stop(): { cpuSeconds: number; wallSeconds: number };
};

export function cpuWindow(pid: number): CpuWindow {
  const cpuStart = readCpuSeconds(pid);
  const wallStart = performance.now();
  return {
    stop: () => ({
      cpuSeconds: readCpuSeconds(pid) - cpuStart,
      wallSeconds: (performance.now() - wallStart) / 1000,
    }),
  };
}
