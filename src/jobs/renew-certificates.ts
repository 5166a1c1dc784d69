// Renews auto_renew certificates once two thirds of their lifetime have passed (self-signed ones are
// re-generated, publicca ones re-issued), with backoff after failures; the rules are in
// features/certificates/renewal.ts, the one-at-a-time guarantee in features/certificates/renewals.ts.
import type { Logger } from "pino";
import type { CertificatesService } from "../features/certificates/certificates.service.ts";
import type { Job } from "./runner.ts";

/** Matches the first backoff step (5 min), so a failed renewal is retried when its backoff ends. */
export const RENEW_CERTIFICATES_INTERVAL_MS = 5 * 60_000;

export function renewCertificatesJob(certificates: CertificatesService, logger: Logger): Job {
  return {
    name: "renew-certificates",
    intervalMs: RENEW_CERTIFICATES_INTERVAL_MS,
    async run({ signal }) {
      const counts = await certificates.renewDue(signal);
      if (counts.renewed + counts.failed > 0)
        logger.info({ job: "renew-certificates", ...counts }, "certificates renewed");
    },
  };
}
