// Certificate use cases: create (generate, import or order over ACME), update, delete unless in use,
// renew on demand or when due. Keys are sealed before they reach the repository and never returned.
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { ConflictError, type ErrorDetail, NotFoundError, ValidationError } from "../../lib/errors.ts";
import type { Changes } from "../../lib/events.ts";
import type { SecretBox } from "../../lib/secret-box.ts";
import type { CertificateAuthority, IssuedMaterial } from "./acme-issuer.ts";
import type {
  CertificateMaterial,
  CertificatePatch,
  CertificateRow,
  CertificatesRepository,
} from "./certificates.repository.ts";
import type { Certificate, CertificateCreate, CertificateUpdate } from "./certificates.schemas.ts";
import { classifyDomain, normaliseDomain } from "./domain-name.ts";
import { type ImportProblem, validateImport } from "./pem.ts";
import { deriveStatus } from "./renewal.ts";
import { materialFields, type RenewalOutcome, Renewals } from "./renewals.ts";
import { generateSelfSigned } from "./self-signed.ts";

export type CertificatesSettings = { selfSignedValidityDays: number };
export type RenewResult = { certificate: Certificate; isFinished: boolean };

const PROBLEM_PATHS: Record<ImportProblem["code"], string> = {
  certificate_unparseable: "body.certificate_pem",
  certificate_expired: "body.certificate_pem",
  key_unparseable: "body.private_key",
  key_encrypted: "body.private_key",
  key_mismatch: "body.private_key",
  domain_not_covered: "body.domain",
};

export class CertificatesService {
  readonly #renewals: Renewals;

  constructor(
    private readonly certificates: CertificatesRepository,
    private readonly secretBox: SecretBox,
    authority: CertificateAuthority,
    private readonly settings: CertificatesSettings,
    private readonly events: Changes,
    private readonly logger: Logger,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.#renewals = new Renewals(certificates, secretBox, authority, settings, logger, now, (id) =>
      this.#changed(id),
    );
  }

  async list(): Promise<Certificate[]> {
    return (await this.certificates.listCertificates()).map((row) => this.#view(row));
  }

  async get(id: string): Promise<Certificate> {
    return this.#view(await this.certificates.getCertificate(id));
  }

  /** For other features that reference certificates (servers, inbounds). */
  async exists(id: string): Promise<boolean> {
    return (await this.certificates.findCertificate(id)) !== undefined;
  }

  async create(input: CertificateCreate): Promise<Certificate> {
    const domain = checkDomain(input.domain);
    const name = input.name.trim();
    await this.#checkNameFree(name);
    const pair = pemPair(input);
    const isImport = pair !== undefined;
    const autoRenew = checkAutoRenew(input.cert_type, isImport, input.auto_renew);
    const now = this.now().toISOString();
    const row: CertificateRow = {
      ...emptyMaterial(),
      id: randomUUID(),
      name,
      cert_type: input.cert_type,
      origin: isImport ? "imported" : input.cert_type === "self_signed" ? "generated" : "acme",
      domain,
      auto_renew: autoRenew,
      issuance: "pending",
      failure_count: 0,
      last_attempt_at: null,
      created_at: now,
      updated_at: now,
    };
    if (pair !== undefined) Object.assign(row, this.#material(importPair(pair, domain)));
    else if (input.cert_type === "self_signed")
      Object.assign(row, this.#material(await this.#generate(domain)));
    await this.certificates.insertCertificate(row);
    if (row.issuance === "pending") this.#renewals.startInBackground(row);
    return this.#view(row);
  }

  async update(id: string, input: CertificateUpdate): Promise<Certificate> {
    const current = await this.certificates.getCertificate(id);
    const patch: Partial<CertificateRow> = {};
    if (input.name !== undefined) {
      patch.name = input.name.trim();
      if (patch.name !== current.name) await this.#checkNameFree(patch.name);
    }
    const pair = pemPair(input);
    if (pair !== undefined) {
      if (this.#renewals.isRunning(id)) throw renewalRunning();
      const imported = this.#material(importPair(pair, current.domain));
      Object.assign(patch, imported, { origin: "imported", failure_count: 0 });
    }
    const isImported = (patch.origin ?? current.origin) === "imported";
    if (current.cert_type === "self_signed" && isImported) {
      patch.auto_renew = checkAutoRenew("self_signed", true, input.auto_renew);
    } else if (input.auto_renew !== undefined) {
      patch.auto_renew = input.auto_renew;
    }
    const updated = await this.certificates.updateCertificate(id, patch, this.now().toISOString());
    if (updated === undefined) throw new NotFoundError("certificate", id);
    if (pair !== undefined) await this.#changed(id);
    return this.#view(updated);
  }

  async delete(id: string): Promise<void> {
    await this.certificates.getCertificate(id);
    const usage = await this.certificates.findUsage(id);
    if (usage.length > 0) {
      throw new ConflictError(`certificate ${id} is in use by ${usage.join(", ")}`, "certificate_in_use");
    }
    await this.#renewals.cancel(id);
    if (!(await this.certificates.deleteCertificate(id))) throw new NotFoundError("certificate", id);
  }

  /** Self-signed: re-generated before answering. publicca: ordered in the background (poll GET). */
  async renew(id: string): Promise<RenewResult> {
    const row = await this.certificates.getCertificate(id);
    if (row.cert_type === "self_signed" && row.origin === "imported") {
      const detail = "an imported self_signed certificate cannot be renewed here; upload a new one with PUT";
      throw new ConflictError(detail, "certificate_not_renewable");
    }
    if (this.#renewals.isRunning(id)) throw renewalRunning();
    if (row.cert_type === "publicca") {
      this.#renewals.startInBackground(row);
      return { certificate: this.#view(row), isFinished: false };
    }
    const outcome = await this.#renewals.renewNow(row, new AbortController().signal);
    if (outcome === "busy") throw renewalRunning();
    return { certificate: await this.get(id), isFinished: true };
  }

  /** The renewal job's pass: renews every auto_renew certificate that is due, one at a time. */
  renewDue(signal: AbortSignal): Promise<Record<RenewalOutcome | "not_due", number>> {
    return this.#renewals.renewDue(signal);
  }

  /** Stops background issuances (they are retried by the renewal job later) and the http-01 listener. */
  close(): Promise<void> {
    return this.#renewals.close();
  }

  /** After the PEM pair changed (renewal or PUT): a listener's failure is logged, never the renewal's or the request's. */
  async #changed(id: string): Promise<void> {
    await this.events.emit("certificateChanged", id).catch((error: unknown) => {
      this.logger.error({ certificate_id: id, err: error }, "certificate change listener failed");
    });
  }

  #view(row: CertificateRow): Certificate {
    const validity =
      row.not_before === null || row.not_after === null
        ? undefined
        : { notBefore: new Date(row.not_before), notAfter: new Date(row.not_after) };
    return {
      id: row.id,
      name: row.name,
      cert_type: row.cert_type,
      domain: row.domain,
      auto_renew: row.auto_renew,
      status: deriveStatus(row.issuance, validity, this.now()),
      not_before: row.not_before,
      not_after: row.not_after,
      issuer: row.issuer,
      subject_alt_names: row.subject_alt_names,
      fingerprint_sha256: row.fingerprint_sha256,
      certificate_pem: row.certificate_pem,
      last_error: row.last_error,
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  #generate(domain: string): Promise<IssuedMaterial> {
    return generateSelfSigned({
      domain,
      validityDays: this.settings.selfSignedValidityDays,
      now: this.now(),
    });
  }

  #material(pair: IssuedMaterial): CertificatePatch {
    return materialFields(pair, this.secretBox);
  }

  async #checkNameFree(name: string): Promise<void> {
    if ((await this.certificates.findIdByName(name)) !== undefined) {
      throw new ConflictError(`a certificate named "${name}" already exists`, "certificate_name_taken");
    }
  }
}

/** A record with no certificate yet (a publicca order in progress). */
function emptyMaterial(): CertificateMaterial {
  return {
    certificate_pem: null,
    private_key_sealed: null,
    not_before: null,
    not_after: null,
    issuer: null,
    subject_alt_names: [],
    fingerprint_sha256: null,
    serial: null,
    last_error: null,
  };
}

function renewalRunning(): ConflictError {
  return new ConflictError("a renewal of this certificate is already running", "renewal_in_progress");
}

function checkDomain(raw: string): string {
  const domain = normaliseDomain(raw);
  if (classifyDomain(domain) === undefined) {
    const message = "must be a DNS name, a wildcard (*.example.com) or an IP address";
    throw new ValidationError(`domain ${message}`, [{ path: "body.domain", message }]);
  }
  return domain;
}

function pemPair(input: { certificate_pem?: string; private_key?: string }): IssuedMaterial | undefined {
  const { certificate_pem: certificatePem, private_key: privateKeyPem } = input;
  if (certificatePem === undefined && privateKeyPem === undefined) return undefined;
  if (certificatePem === undefined || privateKeyPem === undefined) {
    const missing = certificatePem === undefined ? "certificate_pem" : "private_key";
    const message = "is required together with the other half of the PEM pair";
    throw new ValidationError(`${missing} ${message}`, [{ path: `body.${missing}`, message }]);
  }
  return { certificatePem, privateKeyPem };
}

/** An imported self_signed certificate cannot be renewed here, so it cannot auto-renew. */
function checkAutoRenew(
  certType: CertificateRow["cert_type"],
  isImport: boolean,
  requested?: boolean,
): boolean {
  if (certType !== "self_signed" || !isImport) return requested ?? true;
  if (requested === true) {
    const message = "must be false for an imported self_signed certificate (it cannot be re-generated)";
    throw new ValidationError(`auto_renew ${message}`, [{ path: "body.auto_renew", message }]);
  }
  return false;
}

function importPair(pair: IssuedMaterial, domain: string): IssuedMaterial {
  const result = validateImport({ ...pair, domain });
  if (result.ok) return { certificatePem: result.certificatePem, privateKeyPem: result.privateKeyPem };
  const details: ErrorDetail[] = result.problems.map((p) => ({
    path: PROBLEM_PATHS[p.code],
    message: p.message,
  }));
  const first = result.problems[0];
  const detail = result.problems.map((p) => p.message).join("; ");
  throw new ValidationError(detail, details, first?.code ?? "certificate_invalid");
}
