#!/usr/bin/env node
// A dns-01 hook for tests, following the contract in src/features/certificates/dns01-hook.ts: publishes
// the TXT record in pebble-challtestsrv (CHALLTESTSRV_URL) and appends each call to HOOK_LOG.
import { appendFileSync } from "node:fs";

const [action, fqdn, value] = process.argv.slice(2);
const base = process.env.CHALLTESTSRV_URL;
if (base === undefined || (action !== "set" && action !== "clear") || !fqdn || !value) {
  console.error("usage: CHALLTESTSRV_URL=… challtestsrv-dns-hook.mjs set|clear <fqdn> <value>");
  process.exit(2);
}
const body = action === "set" ? { host: `${fqdn}.`, value } : { host: `${fqdn}.` };
const response = await fetch(`${base}/${action}-txt`, { method: "POST", body: JSON.stringify(body) });
if (!response.ok) {
  console.error(`challtestsrv answered ${response.status} to ${action}-txt`);
  process.exit(1);
}
if (process.env.HOOK_LOG) appendFileSync(process.env.HOOK_LOG, `${action} ${fqdn} ${value}\n`);
