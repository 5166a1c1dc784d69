// The certificate resource: the seed's create fields plus what Portcullis reads from the certificate.
// private_key is write-only: accepted on create/update, stored sealed, never in a response.
import { type Static, Type } from "typebox";
import { Timestamp, Uuid } from "../../lib/schemas.ts";

const CertType = Type.Union([Type.Literal("self_signed"), Type.Literal("publicca")], {
  description: "self_signed: generated here (or imported); publicca: issued over ACME (or imported)",
});
export type CertType = Static<typeof CertType>;

const Status = Type.Union(
  [
    Type.Literal("pending"),
    Type.Literal("valid"),
    Type.Literal("expiring"),
    Type.Literal("expired"),
    Type.Literal("failed"),
  ],
  {
    description:
      "pending: ACME issuance running; failed: no certificate could be obtained (see last_error); " +
      "expiring: two thirds of the lifetime have passed, renewal is due",
  },
);

const Name = Type.String({ minLength: 1, maxLength: 128, pattern: "\\S", format: "line" });
const Domain = Type.String({
  minLength: 1,
  maxLength: 253,
  description: "DNS name, wildcard (*.example.com, publicca needs dns-01) or IP address",
});
const CertificatePem = Type.String({
  minLength: 1,
  maxLength: 65536,
  description: "PEM certificate chain, leaf first",
});
const PrivateKey = Type.String({
  minLength: 1,
  maxLength: 16384,
  description: "write-only unencrypted PEM private key (PKCS#8, SEC1 or PKCS#1)",
});

export const Certificate = Type.Object({
  id: Uuid,
  name: Type.String(),
  cert_type: CertType,
  domain: Type.String(),
  auto_renew: Type.Boolean(),
  status: Status,
  not_before: Type.Union([Timestamp, Type.Null()]),
  not_after: Type.Union([Timestamp, Type.Null()]),
  issuer: Type.Union([Type.String(), Type.Null()]),
  subject_alt_names: Type.Array(Type.String(), { description: "DNS names and IP addresses" }),
  fingerprint_sha256: Type.Union([Type.String(), Type.Null()], {
    description: "AB:CD:… as openssl prints it",
  }),
  certificate_pem: Type.Union([Type.String(), Type.Null()], { description: "the chain, leaf first" }),
  last_error: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Certificate = Static<typeof Certificate>;

export const CertificateCreate = Type.Object(
  {
    name: Name,
    cert_type: CertType,
    domain: Domain,
    auto_renew: Type.Optional(
      Type.Boolean({ description: "default true, false for an imported self_signed certificate" }),
    ),
    certificate_pem: Type.Optional(CertificatePem),
    private_key: Type.Optional(PrivateKey),
  },
  { additionalProperties: false },
);
export type CertificateCreate = Static<typeof CertificateCreate>;

export const CertificateUpdate = Type.Object(
  {
    name: Type.Optional(Name),
    auto_renew: Type.Optional(Type.Boolean()),
    certificate_pem: Type.Optional(CertificatePem),
    private_key: Type.Optional(PrivateKey),
  },
  { additionalProperties: false },
);
export type CertificateUpdate = Static<typeof CertificateUpdate>;
