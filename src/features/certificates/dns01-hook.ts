// dns-01 through an operator-supplied command, so any DNS provider works without Portcullis knowing it.
//
// Contract (executed with execFile, no shell; `args` configured before the three below):
//   <command> [args…] set   <fqdn> <value>   publish TXT <fqdn> = <value>; exit 0 only once the record is
//                                            visible to the CA's resolvers (propagation is the hook's job)
//   <command> [args…] clear <fqdn> <value>   remove that one TXT value (others under the name may stay)
// <fqdn> is "_acme-challenge.<domain>" without a trailing dot ("*.example.com" → "_acme-challenge.example.com").
// <value> is the base64url SHA-256 of the key authorization (43 characters, public by nature).
// stdout is ignored; a non-zero exit, a signal or the timeout fail the step and stderr's tail is reported.
import { execFile } from "node:child_process";

export type DnsHook = {
  command: string;
  args?: readonly string[];
  /** Kills the hook (SIGTERM) after this long; default 120 s. */
  timeoutMs?: number;
  /** The hook's whole environment; when absent it inherits Portcullis's own. */
  env?: Record<string, string>;
};

export type DnsHookAction = "set" | "clear";

export const DEFAULT_DNS_HOOK_TIMEOUT_MS = 120_000;
const STDERR_TAIL = 300;

/** The TXT record name for a domain's dns-01 challenge. */
export function dnsChallengeName(domain: string): string {
  return `_acme-challenge.${domain.startsWith("*.") ? domain.slice(2) : domain}`;
}

function failureReason(error: Error, timeoutMs: number): string {
  const code = "code" in error ? error.code : undefined;
  const signal = "signal" in error ? error.signal : undefined;
  if ("killed" in error && error.killed === true && signal === "SIGTERM")
    return `timed out after ${timeoutMs} ms`;
  if (code === "ENOENT") return "command not found";
  if (code === "EACCES") return "command is not executable";
  if (typeof code === "number") return `exited with status ${code}`;
  if (code === "ABORT_ERR") return "stopped: the issuance was cancelled or ran out of time";
  if (typeof signal === "string") return `killed by ${signal}`;
  return error.message;
}

/** Runs the hook once; `signal` (the issuance's cancellation) kills it early. */
export function runDnsHook(
  hook: DnsHook,
  action: DnsHookAction,
  fqdn: string,
  value: string,
  signal?: AbortSignal,
): Promise<void> {
  const timeoutMs = hook.timeoutMs ?? DEFAULT_DNS_HOOK_TIMEOUT_MS;
  const args = [...(hook.args ?? []), action, fqdn, value];
  return new Promise((resolve, reject) => {
    execFile(
      hook.command,
      args,
      { timeout: timeoutMs, env: hook.env, maxBuffer: 256 * 1024, windowsHide: true, signal },
      (error, _stdout, stderr) => {
        if (error === null) return resolve();
        const tail = stderr.toString().trim().slice(-STDERR_TAIL);
        const reason = failureReason(error, timeoutMs);
        reject(new Error(`dns-01 hook ${action} ${fqdn} ${reason}${tail === "" ? "" : `; stderr: ${tail}`}`));
      },
    );
  });
}
