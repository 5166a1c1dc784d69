// Audit-log retention: entries older than PORTCULLIS_AUDIT_RETENTION_DAYS go, and entries of calls
// that never finished (the process stopped mid-call) are marked `interrupted`. Hourly; cheap.
import type { Logger } from "pino";
import type { AuditService } from "../features/audit/audit.service.ts";
import type { Job } from "./runner.ts";

export function pruneAuditJob(audit: AuditService, logger: Logger): Job {
  return {
    name: "prune-audit",
    intervalMs: 60 * 60_000,
    async run() {
      const counts = await audit.prune();
      if (counts.deleted + counts.interrupted > 0)
        logger.info({ job: "prune-audit", ...counts }, "audit log pruned");
    },
  };
}
