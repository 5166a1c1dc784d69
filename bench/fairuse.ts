// The IP-limit decision over a whole fleet's sightings in one tick: N users with K addresses each (a mix of
// IPv4, IPv4-mapped and IPv6, a few allow-listed, 2 % of users over the limit), the decision run for every
// user as the fair-use job runs it, over several ticks with the clock moving. Pure CPU: no database, no I/O.
import { loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  decideFairUse,
  type FairUseOptions,
  type FairUseState,
  FRESH_STATE,
  parseAllowList,
  type Sighting,
} from "../src/features/fairuse/decision.ts";
import { describeCode, describeMachine } from "./lib/machine.ts";
import { writeBetweenMarkers } from "./lib/markers.ts";
import { fmt, prng } from "./lib/stats.ts";

const { values } = parseArgs({
  options: {
    users: { type: "string", default: "100000" },
    addresses: { type: "string", default: "3" },
    ticks: { type: "string", default: "10" },
    write: { type: "string" },
  },
});
const USERS = Number(values.users);
const PER_USER = Number(values.addresses);
const TICKS = Number(values.ticks);
const TARGET_MS = 200;
const MIN = 60_000;
const START = Date.UTC(2026, 11, 2, 12, 0, 0);
const OPTIONS: FairUseOptions = {
  windowMs: 10 * MIN,
  tolerance24: false,
  allow: parseAllowList(["10.0.0.0/8", "2001:db8:ffff::/48"]),
  blockPeriodsMs: [10 * MIN, 60 * MIN, 24 * 60 * MIN],
  forgetMs: 7 * 24 * 60 * MIN,
  warnGraceMs: 2 * MIN,
};

const random = prng(50);
const hex = () => Math.floor(random() * 0x10000).toString(16);
function address(i: number): string {
  const pick = random();
  if (pick < 0.6)
    return `${1 + (i % 223)}.${(i >>> 8) & 255}.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}`;
  if (pick < 0.7) return `::ffff:100.64.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}`;
  if (pick < 0.72) return `10.1.${Math.floor(random() * 256)}.7`;
  return `2a01:${hex()}:${hex()}:${hex()}:${hex()}::${hex()}`;
}

/** Sightings per user: K addresses seen within the last minutes; 2 % of users one more (over a limit of K). */
const limits = new Int32Array(USERS).fill(PER_USER);
const sightings: Sighting[][] = [];
for (let i = 0; i < USERS; i++) {
  const n = i % 50 === 0 ? PER_USER + 1 : PER_USER;
  const own: Sighting[] = [];
  for (let k = 0; k < n; k++)
    own.push({ ip: address(i), lastSeenMs: START - Math.floor(random() * 5 * MIN) });
  sightings.push(own);
  if (i % 10 === 3) limits[i] = 0; // unlimited
}
let states: FairUseState[] = new Array<FairUseState>(USERS).fill(FRESH_STATE);

// one untimed warm-up pass (the process's first: V8 compiles the decision), its result discarded; its CPU time is reported
const warmCpu = process.cpuUsage();
for (let i = 0; i < USERS; i++)
  decideFairUse(FRESH_STATE, limits[i] as number, sightings[i] as Sighting[], START, OPTIONS);
const warmUsed = process.cpuUsage(warmCpu);
const warmMs = (warmUsed.user + warmUsed.system) / 1000;
const rows: string[] = [];
const times: number[] = [];
const walls: number[] = [];
for (let tick = 0; tick < TICKS; tick++) {
  const now = START + tick * MIN;
  // the nodes' reports move on: every user's addresses were seen again just before this tick (not timed)
  for (const own of sightings) for (const s of own) s.lastSeenMs = now - Math.floor(random() * 30_000);
  const counts = { warn: 0, block: 0, release: 0, changed: 0 };
  const next = new Array<FairUseState>(USERS);
  const cpuStart = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0; i < USERS; i++) {
    const before = states[i] as FairUseState;
    const decided = decideFairUse(before, limits[i] as number, sightings[i] as Sighting[], now, OPTIONS);
    next[i] = decided.state;
    if (decided.state !== before) counts.changed++;
    for (const action of decided.actions) counts[action.type]++;
  }
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  const used = process.cpuUsage(cpuStart);
  const cpuMs = (used.user + used.system) / 1000;
  states = next;
  times.push(cpuMs);
  walls.push(ms);
  rows.push(
    `| ${tick + 1} | ${fmt(cpuMs)} | ${fmt(ms)} | ${counts.warn} / ${counts.block} / ${counts.release} | ${counts.changed} |`,
  );
}
const sorted = [...times].sort((a, b) => a - b);
const worst = sorted[sorted.length - 1] ?? Number.NaN;
const median = sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
const out = [
  `Run of ${new Date().toISOString()}: \`npm run bench:fairuse -- --users ${USERS} --addresses ${PER_USER} --ticks ${TICKS}\``,
  "",
  ...describeMachine([describeCode(join(import.meta.dirname, ".."))]).map((line) => `- ${line}`),
  `- ${USERS.toLocaleString("en")} users × ${PER_USER} addresses (60 % IPv4, 10 % IPv4-mapped, 2 % allow-listed, 28 % IPv6), every 50th user one more, every 10th unlimited; window 10 min, grace 2 min; the clock 1 minute further each tick`,
  "",
  "| tick | CPU ms | wall ms | warn / block / release | states changed |",
  "|---|---|---|---|---|",
  ...rows,
  "",
  `CPU time of a tick (the process's user + system time, which the machine's other load does not inflate): median ${fmt(median)} ms, worst ${fmt(worst)} ms: target < ${TARGET_MS} ms a tick ${worst < TARGET_MS ? "met (worst)" : "NOT met"}. Wall time: median ${fmt([...walls].sort((a, b) => a - b)[Math.floor(walls.length / 2)] ?? Number.NaN)} ms, worst ${fmt(Math.max(...walls))} ms (includes waiting for a CPU: read it with the load average).`,
  `The untimed warm-up pass before tick 1 (a process's first, while V8 compiles): ${fmt(warmMs)} CPU ms.`,
  `load average at the end: ${loadavg()
    .map((v) => v.toFixed(2))
    .join(" ")}`,
];
console.log(out.join("\n"));
if (values.write !== undefined) writeBetweenMarkers(values.write, "bench:fairuse results", out.join("\n"));
