// Resident memory of a process under load: samples VmRSS from /proc/<pid>/status at a fixed interval
// (Linux only) and keeps the peak and the last value. Reading the file costs microseconds, so the
// sampler does not disturb the measured processes.
import { readFileSync } from "node:fs";

export type RssSampler = {
  /** Stops sampling; returns the peak and last VmRSS in MB (10^6 bytes) and the number of samples. */
  stop(): { peakMB: number; lastMB: number; samples: number };
};

function readStatusKiB(pid: number, field: "VmRSS" | "VmHWM"): number | undefined {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB$`, "m").exec(
      readFileSync(`/proc/${pid}/status`, "utf8"),
    );
    return match?.[1] === undefined ? undefined : Number(match[1]);
  } catch {
    return undefined; // the process has exited
  }
}

export function readRssKiB(pid: number): number | undefined {
  return readStatusKiB(pid, "VmRSS");
}

/** The process's peak resident memory since it started (VmHWM), in MB (10^6 bytes). */
export function readPeakRssMB(pid: number): number | undefined {
  const kib = readStatusKiB(pid, "VmHWM");
  return kib === undefined ? undefined : (kib * 1024) / 1e6;
}

export function sampleRss(pid: number, intervalMs = 100): RssSampler {
  let peakKiB = 0;
  let lastKiB = 0;
  let samples = 0;
  const take = () => {
    const kib = readRssKiB(pid);
    if (kib === undefined) return;
    samples++;
    lastKiB = kib;
    peakKiB = Math.max(peakKiB, kib);
  };
  take();
  const timer = setInterval(take, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      take();
      return { peakMB: (peakKiB * 1024) / 1e6, lastMB: (lastKiB * 1024) / 1e6, samples };
    },
  };
}
