// /api/certificates: the seed's list/get/create, plus update, delete (409 while in use) and renew.
import { Type } from "typebox";
import type { App } from "../../lib/http.ts";
import { IdParams, problems } from "../../lib/schemas.ts";
import { Certificate, CertificateCreate, CertificateUpdate } from "./certificates.schemas.ts";
import type { CertificatesService } from "./certificates.service.ts";

export function certificatesRoutes(app: App, certificates: CertificatesService): void {
  const tags = ["certificates"];

  app.get(
    "/api/certificates",
    {
      schema: {
        tags,
        summary: "List certificates, oldest first",
        response: { 200: Type.Array(Certificate), ...problems() },
      },
    },
    async () => certificates.list(),
  );

  app.get(
    "/api/certificates/:id",
    {
      schema: {
        tags,
        summary: "Get one certificate",
        params: IdParams,
        response: { 200: Certificate, ...problems(404) },
      },
    },
    async (request) => certificates.get(request.params.id),
  );

  app.post(
    "/api/certificates",
    {
      schema: {
        tags,
        summary: "Create: generate a self_signed one, import a PEM pair, or order a publicca one (pending)",
        description:
          "With certificate_pem and private_key the pair is checked and imported. Without them, " +
          "self_signed generates an ECDSA P-256 certificate for domain; publicca answers 201 with " +
          "status pending and issues over ACME in the background (poll GET until valid or failed).",
        body: CertificateCreate,
        response: { 201: Certificate, ...problems(409) },
      },
    },
    async (request, reply) => reply.code(201).send(await certificates.create(request.body)),
  );

  app.put(
    "/api/certificates/:id",
    {
      schema: {
        tags,
        summary: "Rename, switch auto_renew, or replace the PEM pair (same checks as on create)",
        params: IdParams,
        body: CertificateUpdate,
        response: { 200: Certificate, ...problems(404, 409) },
      },
    },
    async (request) => certificates.update(request.params.id, request.body),
  );

  app.delete(
    "/api/certificates/:id",
    {
      schema: {
        tags,
        summary: "Delete a certificate; 409 certificate_in_use while a server or inbound uses it",
        params: IdParams,
        response: { 204: Type.Null(), ...problems(404, 409) },
      },
    },
    async (request, reply) => {
      await certificates.delete(request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    "/api/certificates/:id/renew",
    {
      schema: {
        tags,
        summary: "Renew now, keeping the id",
        description:
          "self_signed: re-generated, 200 with the new certificate. publicca: 202 with the current " +
          "record while the CA issues in the background; poll GET until the serial changes or " +
          "last_error is set. 409 renewal_in_progress, or certificate_not_renewable for an imported " +
          "self_signed certificate.",
        params: IdParams,
        response: { 200: Certificate, 202: Certificate, ...problems(404, 409) },
      },
    },
    async (request, reply) => {
      const { certificate, isFinished } = await certificates.renew(request.params.id);
      return reply.code(isFinished ? 200 : 202).send(certificate);
    },
  );
}
