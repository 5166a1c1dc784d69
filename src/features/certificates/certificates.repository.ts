// Certificates in SQL. The private key column holds only the secret box's sealed form; the renewal
// lease (`renewing_since`) is taken with one conditional UPDATE so two instances cannot both renew.
import type { Kysely, Selectable, Updateable } from "kysely";
import { read } from "../../db/dialect.ts";
import type { CertificatesTable, Database } from "../../db/types.ts";
import { NotFoundError } from "../../lib/errors.ts";

export type CertificateOrigin = "generated" | "imported" | "acme";
export type IssuanceState = "pending" | "failed" | "issued";

/** A stored certificate, normalised; `private_key_sealed` never leaves the service. */
export type CertificateRow = {
  id: string;
  name: string;
  cert_type: "self_signed" | "publicca";
  origin: CertificateOrigin;
  domain: string;
  auto_renew: boolean;
  issuance: IssuanceState;
  certificate_pem: string | null;
  private_key_sealed: string | null;
  not_before: string | null;
  not_after: string | null;
  issuer: string | null;
  subject_alt_names: string[];
  fingerprint_sha256: string | null;
  serial: string | null;
  last_error: string | null;
  failure_count: number;
  last_attempt_at: string | null;
  created_at: string;
  updated_at: string;
};

/** The columns that describe the certificate itself; replaced together on import, issuance, renewal. */
export type CertificateMaterial = Pick<
  CertificateRow,
  | "certificate_pem"
  | "private_key_sealed"
  | "not_before"
  | "not_after"
  | "issuer"
  | "subject_alt_names"
  | "fingerprint_sha256"
  | "serial"
  | "last_error"
>;

export type CertificatePatch = Partial<Omit<CertificateRow, "id" | "cert_type" | "domain" | "created_at">>;

/** Where a certificate is in use, as "server <name>" / "inbound <tag>"; empty when unused. */
export type CertificateUsage = string[];

export class CertificatesRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async listCertificates(): Promise<CertificateRow[]> {
    const rows = await this.db
      .selectFrom("certificates")
      .selectAll()
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    return rows.map(toRow);
  }

  /** Certificates the renewal job looks at (the service never lets an imported self_signed one renew). */
  async listAutoRenewing(): Promise<CertificateRow[]> {
    const rows = await this.db
      .selectFrom("certificates")
      .selectAll()
      .where("auto_renew", "=", true)
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    return rows.map(toRow);
  }

  async findCertificate(id: string): Promise<CertificateRow | undefined> {
    const row = await this.db.selectFrom("certificates").selectAll().where("id", "=", id).executeTakeFirst();
    return row && toRow(row);
  }

  async getCertificate(id: string): Promise<CertificateRow> {
    const row = await this.findCertificate(id);
    if (row === undefined) throw new NotFoundError("certificate", id);
    return row;
  }

  async findIdByName(name: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom("certificates")
      .select("id")
      .where("name", "=", name)
      .executeTakeFirst();
    return row?.id;
  }

  async insertCertificate(row: CertificateRow): Promise<void> {
    await this.db
      .insertInto("certificates")
      .values({ ...row, subject_alt_names: JSON.stringify(row.subject_alt_names), renewing_since: null })
      .execute();
  }

  /**
   * Applies only the given fields; returns the updated row, or undefined when the id is unknown.
   * `releaseRenewal` frees the renewal lease in the same statement, so nobody can see the new status
   * while the lease is still held.
   */
  async updateCertificate(
    id: string,
    patch: CertificatePatch,
    updatedAt: string,
    { releaseRenewal = false } = {},
  ): Promise<CertificateRow | undefined> {
    const { subject_alt_names, ...rest } = patch;
    const values: Updateable<CertificatesTable> = {
      ...rest,
      updated_at: updatedAt,
      ...(releaseRenewal ? { renewing_since: null } : {}),
    };
    if (subject_alt_names !== undefined) values.subject_alt_names = JSON.stringify(subject_alt_names);
    const result = await this.db
      .updateTable("certificates")
      .set(values)
      .where("id", "=", id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 0 ? undefined : this.findCertificate(id);
  }

  async deleteCertificate(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom("certificates").where("id", "=", id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /**
   * Takes the renewal lease unless another renewal holds it; a lease older than `staleBefore` is
   * considered abandoned (a crashed instance) and taken over.
   */
  async claimRenewal(id: string, now: string, staleBefore: string): Promise<boolean> {
    const result = await this.db
      .updateTable("certificates")
      .set({ renewing_since: now })
      .where("id", "=", id)
      .where((eb) => eb.or([eb("renewing_since", "is", null), eb("renewing_since", "<", staleBefore)]))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async releaseRenewal(id: string): Promise<void> {
    await this.db.updateTable("certificates").set({ renewing_since: null }).where("id", "=", id).execute();
  }

  /** What uses the certificate: servers (their default_certificate_id) and inbounds (their certificate_id). */
  async findUsage(id: string): Promise<CertificateUsage> {
    const servers = await this.db
      .selectFrom("servers")
      .select("name")
      .where("default_certificate_id", "=", id)
      .orderBy("name")
      .execute();
    const inbounds = await this.db
      .selectFrom("server_inbounds as i")
      .innerJoin("servers as s", "s.id", "i.server_id")
      .select(["i.tag", "s.name"])
      .where("i.certificate_id", "=", id)
      .orderBy("s.name")
      .orderBy("i.tag")
      .execute();
    return [
      ...servers.map((server) => `server ${server.name}`),
      ...inbounds.map((inbound) => `inbound ${inbound.tag} on server ${inbound.name}`),
    ];
  }
}

function toRow(row: Selectable<CertificatesTable>): CertificateRow {
  return {
    id: row.id,
    name: row.name,
    cert_type: row.cert_type,
    origin: row.origin,
    domain: row.domain,
    auto_renew: read.bool(row.auto_renew),
    issuance: row.issuance,
    certificate_pem: row.certificate_pem,
    private_key_sealed: row.private_key_sealed,
    not_before: read.optionalTimestamp(row.not_before),
    not_after: read.optionalTimestamp(row.not_after),
    issuer: row.issuer,
    subject_alt_names: JSON.parse(row.subject_alt_names) as string[],
    fingerprint_sha256: row.fingerprint_sha256,
    serial: row.serial,
    last_error: row.last_error,
    failure_count: row.failure_count,
    last_attempt_at: read.optionalTimestamp(row.last_attempt_at),
    created_at: read.timestamp(row.created_at),
    updated_at: read.timestamp(row.updated_at),
  };
}
