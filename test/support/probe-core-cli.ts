// probeCore (convergence.ts) as a command, for the browser tests: their type-check runs with the DOM
// library, under which the service's gRPC client does not compile, so they run it as a process.
// Usage: tsx test/support/probe-core-cli.ts <host:port> '<ProbeGrant[] as JSON>'; prints
// {"present": [...], "absent": [...]} (emails).
import { type ProbeGrant, probeCore } from "./convergence.ts";

const [address, grants] = process.argv.slice(2);
if (address === undefined || grants === undefined) {
  process.stderr.write("usage: probe-core-cli.ts <host:port> <grants JSON>\n");
  process.exit(2);
}
const result = await probeCore(address, JSON.parse(grants) as ProbeGrant[]);
process.stdout.write(`${JSON.stringify(result)}\n`);
