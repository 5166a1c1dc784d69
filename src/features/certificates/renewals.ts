// Running renewals (and first ACME issuances, which are the same work): one at a time per
// certificate, in this process (a map of running ones) and across instances (the database lease),
// storing the new chain and sealed key under the same id, or the failure with its backoff state.
import type { Logger } from "pino";
import type { SecretBox } from "../../lib/secret-box.ts";
import { AcmeIssueError, describeError, scrub } from "./acme-errors.ts";
import type { CertificateAuthority, IssuedMaterial } from "./acme-issuer.ts";
import type {
  CertificateMaterial,
  CertificatePatch,
  CertificateRow,
  CertificatesRepository,
} from "./certificates.repository.ts";
import { readCertificateFacts } from "./pem.ts";
import { decideRenewal, type RenewalState } from "./renewal.ts";
import { generateSelfSigned } from "./self-signed.ts";

export type RenewalOutcome = "renewed" | "failed" | "busy";

/** A lease older than this belongs to a renewal that died with its process; ACME gives up after 10 min. */
const LEASE_MS = 15 * 60_000;

type Running = { controller: AbortController; done: Promise<RenewalOutcome> };

/** The columns a new certificate (generated, imported or issued) fills in. */
export function materialFields(
  pair: IssuedMaterial,
  secretBox: SecretBox,
): CertificateMaterial & { issuance: "issued" } {
  const facts = readCertificateFacts(pair.certificatePem);
  return {
    issuance: "issued",
    certificate_pem: pair.certificatePem,
    private_key_sealed: secretBox.seal(pair.privateKeyPem),
    not_before: facts.notBefore.toISOString(),
    not_after: facts.notAfter.toISOString(),
    issuer: facts.issuer,
    subject_alt_names: facts.subjectAltNames,
    fingerprint_sha256: facts.fingerprintSha256,
    serial: facts.serial,
    last_error: null,
  };
}

export function renewalStateOf(row: CertificateRow): RenewalState {
  return {
    isAutoRenew: row.auto_renew && !(row.cert_type === "self_signed" && row.origin === "imported"),
    validity:
      row.not_before === null || row.not_after === null
        ? undefined
        : { notBefore: new Date(row.not_before), notAfter: new Date(row.not_after) },
    failureCount: row.failure_count,
    lastAttemptAt: row.last_attempt_at === null ? undefined : new Date(row.last_attempt_at),
  };
}

export class Renewals {
  readonly #running = new Map<string, Running>();

  constructor(
    private readonly certificates: CertificatesRepository,
    private readonly secretBox: SecretBox,
    private readonly authority: CertificateAuthority,
    private readonly settings: { selfSignedValidityDays: number },
    private readonly logger: Logger,
    private readonly now: () => Date,
    /** After a renewal stored a new certificate, released its lease and left the running set. */
    private readonly onRenewed: (id: string) => Promise<void> = async () => {},
  ) {}

  isRunning(id: string): boolean {
    return this.#running.has(id);
  }

  /** Starts a renewal nobody waits for; its result lands in the record (status, last_error). */
  startInBackground(row: CertificateRow): void {
    void this.#track(row, undefined);
  }

  renewNow(row: CertificateRow, signal: AbortSignal): Promise<RenewalOutcome> {
    return this.#track(row, signal);
  }

  async renewDue(signal: AbortSignal): Promise<Record<RenewalOutcome | "not_due", number>> {
    const counts = { renewed: 0, failed: 0, busy: 0, not_due: 0 };
    for (const row of await this.certificates.listAutoRenewing()) {
      if (signal.aborted) break;
      if (this.isRunning(row.id)) {
        counts.busy += 1;
        continue;
      }
      if (!decideRenewal(renewalStateOf(row), this.now()).isDue) {
        counts.not_due += 1;
        continue;
      }
      counts[await this.#track(row, signal)] += 1;
    }
    return counts;
  }

  async cancel(id: string): Promise<void> {
    const running = this.#running.get(id);
    running?.controller.abort();
    await running?.done;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#running.keys()].map((id) => this.cancel(id)));
    await this.authority.close();
  }

  #track(row: CertificateRow, parent: AbortSignal | undefined): Promise<RenewalOutcome> {
    const existing = this.#running.get(row.id);
    if (existing !== undefined) return Promise.resolve("busy");
    const controller = new AbortController();
    const signal = parent === undefined ? controller.signal : AbortSignal.any([parent, controller.signal]);
    const leave = () => {
      if (this.#running.get(row.id)?.controller === controller) this.#running.delete(row.id);
    };
    const done = this.#renew(row, signal, leave)
      .catch((error: unknown) => {
        this.logger.error(
          { certificate_id: row.id, error: describeError(error) },
          "certificate renewal crashed",
        );
        return "failed" as const;
      })
      .finally(leave);
    this.#running.set(row.id, { controller, done });
    // Listeners run once the renewal no longer counts as running, so a new one may start meanwhile.
    return done.then(async (outcome) => {
      if (outcome === "renewed") await this.onRenewed(row.id);
      return outcome;
    });
  }

  async #renew(row: CertificateRow, signal: AbortSignal, leave: () => void): Promise<RenewalOutcome> {
    const startedAt = this.now();
    const staleBefore = new Date(startedAt.getTime() - LEASE_MS).toISOString();
    if (!(await this.certificates.claimRenewal(row.id, startedAt.toISOString(), staleBefore))) return "busy";
    try {
      const patch = await this.#obtain(row, signal).then(
        (material) => this.#success(row, material),
        (error: unknown) => this.#failure(row, error),
      );
      // Leave the running set and free the lease as the result becomes visible: a caller that sees
      // the new status may start the next renewal at once.
      leave();
      await this.certificates.updateCertificate(row.id, patch, this.now().toISOString(), {
        releaseRenewal: true,
      });
      return patch.issuance === "issued" && patch.last_error === null ? "renewed" : "failed";
    } catch (error) {
      await this.certificates.releaseRenewal(row.id);
      throw error;
    }
  }

  #obtain(row: CertificateRow, signal: AbortSignal): Promise<IssuedMaterial> {
    if (row.cert_type === "self_signed") {
      const validityDays = this.settings.selfSignedValidityDays;
      return generateSelfSigned({ domain: row.domain, validityDays, now: this.now() });
    }
    return this.authority.issue(row.domain, signal);
  }

  #success(row: CertificateRow, material: IssuedMaterial): CertificatePatch {
    const patch = materialFields(material, this.secretBox);
    this.logger.info(
      { certificate_id: row.id, serial: patch.serial, not_after: patch.not_after },
      "certificate issued",
    );
    return {
      ...patch,
      origin: row.cert_type === "self_signed" ? "generated" : "acme",
      failure_count: 0,
      last_attempt_at: this.now().toISOString(),
    };
  }

  #failure(row: CertificateRow, error: unknown): CertificatePatch {
    const message = error instanceof AcmeIssueError ? error.message : scrub(describeError(error));
    this.logger.warn({ certificate_id: row.id, error: message }, "certificate issuance failed");
    return {
      issuance: row.certificate_pem === null ? "failed" : "issued",
      last_error: message,
      failure_count: row.failure_count + 1,
      last_attempt_at: this.now().toISOString(),
    };
  }
}
