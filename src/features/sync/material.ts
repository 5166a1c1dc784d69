// What an inbound is built from besides its row: its template, its certificate's PEM pair (the key
// opened from the secret box) and its sealed generated secrets. One place, so CoreSync and the
// inbound service build from the same material.

import { NotFoundError, UnprocessableError } from "../../lib/errors.ts";
import type { SecretBox } from "../../lib/secret-box.ts";
import type { CertificatesRepository } from "../certificates/certificates.repository.ts";
import type { InboundSecrets } from "../templates/prepare.ts";
import type { TemplatesService } from "../templates/templates.service.ts";
import { type CertificateMaterial, type InboundSpec, inboundSpec } from "./desired.ts";
import type { SyncInbound } from "./stores.ts";

export class InboundMaterial {
  constructor(
    private readonly templates: TemplatesService,
    private readonly certificates: CertificatesRepository,
    private readonly secretBox: SecretBox,
  ) {}

  async certificate(id: string): Promise<CertificateMaterial> {
    const row = await this.certificates.findCertificate(id);
    if (row === undefined) throw new NotFoundError("certificate", id);
    if (row.certificate_pem === null || row.private_key_sealed === null) {
      const detail = `certificate ${id} has not been issued yet (status pending or failed)`;
      throw new UnprocessableError(detail, undefined, "certificate_not_ready");
    }
    const keyPem = this.secretBox.open(row.private_key_sealed);
    return { domain: row.domain, certificatePem: row.certificate_pem, keyPem };
  }

  seal(secrets: InboundSecrets): string {
    return this.secretBox.seal(JSON.stringify(secrets));
  }

  open(sealed: string): InboundSecrets {
    return JSON.parse(this.secretBox.open(sealed)) as InboundSecrets;
  }

  /** The inbound's spec with these grants, ready for desiredInbound(). */
  async specOf(
    inbound: SyncInbound,
    grants: readonly { proxy_user_id: string; credential: string; level: number }[],
  ): Promise<InboundSpec> {
    const template = await this.templates.get(inbound.template_id);
    const certificate =
      inbound.certificate_id === null ? undefined : await this.certificate(inbound.certificate_id);
    return inboundSpec(template, inbound, this.open(inbound.secrets_sealed), certificate, grants);
  }
}
