// Renews node agents' certificates before they expire (features/nodes/nodes.service.ts renewIfDue:
// with less than 30 days of their 90 left, the agent makes a new key, the panel signs its request and
// accepts both until the agent has swapped, then only the new one). Only the instance holding a
// server's lease (the reconcile job claims them) renews it, so two panels never race on one agent.
// Hourly: a renewal that fails (the agent away) is tried again next hour, with weeks to spare.
import type { Logger } from "pino";
import type { NodesService } from "../features/nodes/nodes.service.ts";
import type { ServersService } from "../features/servers/servers.service.ts";
import type { ServerLeases } from "../features/sync/leases.ts";
import type { Job } from "./runner.ts";

export const RENEW_NODE_CERTIFICATES_INTERVAL_MS = 60 * 60_000;

export type RenewNodeCertificatesOptions = {
  nodes: NodesService;
  servers: ServersService;
  leases: ServerLeases;
  logger: Logger;
  intervalMs?: number;
};

export function renewNodeCertificatesJob(options: RenewNodeCertificatesOptions): Job {
  const { nodes, servers, leases, logger } = options;
  return {
    name: "renew-node-certificates",
    intervalMs: options.intervalMs ?? RENEW_NODE_CERTIFICATES_INTERVAL_MS,
    async run({ signal }) {
      for (const server of await servers.list()) {
        if (signal.aborted) return;
        if (server.connection !== "node" || !leases.holds(server.id)) continue;
        try {
          if (await nodes.renewIfDue(server.id)) {
            logger.info({ job: "renew-node-certificates", server_id: server.id }, "node certificate renewed");
          }
        } catch (error) {
          // The message only: an agent's answer never carries key material, and no request body is logged.
          const message = error instanceof Error ? error.message : String(error);
          logger.warn(
            { job: "renew-node-certificates", server_id: server.id, err: message },
            "node certificate not renewed; tried again next hour",
          );
        }
      }
    },
  };
}
