// Turns a saved template into the Xray-style JSON of one inbound: variables and built-ins
// substituted, port/tag filled in when the template leaves them out, and the inbound certificate's
// PEM pair injected under TLS. Provisioning passes the result to buildInbound for its core.
import { randomBytes } from "node:crypto";
import type { Problem } from "../../cores/core-types.ts";
import type { JsonObject, JsonValue } from "../../lib/json.ts";
import { generateSs2022Key, shadowsocks2022Method } from "../../protocols/shadowsocks.ts";
import { objectAt, type TemplateDefinition } from "./definition.ts";
import { generateRealityKeys, generateShortId } from "./reality.ts";
import { type Builtins, placeholdersOf, type RenderResult, renderTemplate } from "./render.ts";

export type InboundCertificate = { certificatePem: string; keyPem: string };

export type PrepareOptions = {
  /** Values for the template's variables; missing ones take their defaults. */
  values: Readonly<Record<string, JsonValue>>;
  builtins: Builtins;
  /** Required when the template's security is tls. */
  certificate?: InboundCertificate;
  /**
   * Users written into settings.clients. Only for cores that take no users through the API
   * (V2Ray 4.x shadowsocks holds exactly one user per inbound); otherwise leave it out.
   */
  clients?: JsonObject[];
};

export function prepareInboundJson(
  template: Pick<TemplateDefinition, "config" | "variables">,
  options: PrepareOptions,
): RenderResult {
  const rendered = renderTemplate(template.config, template.variables, options.values, options.builtins);
  if (!rendered.ok) return rendered;
  return completeInbound(rendered.json, options);
}

function completeInbound(json: JsonObject, options: PrepareOptions): RenderResult {
  const problems: Problem[] = [];
  const out: JsonObject = { ...json };
  const { port, tag } = options.builtins;
  if (out.port === undefined) {
    if (port === undefined) problems.push({ path: "port", message: "built-in {{port}} has no value" });
    else out.port = port;
  }
  if (out.tag === undefined) {
    if (tag === undefined) problems.push({ path: "tag", message: "built-in {{tag}} has no value" });
    else out.tag = tag;
  }
  const stream = objectAt(out.streamSettings);
  if (String(stream?.security ?? "").toLowerCase() === "tls" && stream !== undefined) {
    if (options.certificate === undefined) {
      problems.push({ path: "certificate", message: "a TLS template needs the inbound's certificate" });
    } else {
      const { certificatePem, keyPem } = options.certificate;
      const tls = objectAt(stream.tlsSettings) ?? {};
      const certificates = [{ certificate: certificatePem, key: keyPem }];
      out.streamSettings = { ...stream, tlsSettings: { ...tls, certificates } };
    }
  }
  if (options.clients !== undefined)
    out.settings = { ...(objectAt(out.settings) ?? {}), clients: options.clients };
  return problems.length > 0 ? { ok: false, problems } : { ok: true, json: out };
}

export type InboundSecrets = Pick<
  Builtins,
  "reality_private_key" | "reality_public_key" | "reality_short_id" | "ss2022_server_key"
>;

/**
 * Fresh secrets for one new inbound: the REALITY key pair and short id when the template uses
 * REALITY, the server key when it uses {{ss2022_server_key}}. Store them with the inbound: clients
 * need the REALITY public key and short id, SS-2022 clients the server key.
 */
export function generateInboundSecrets(template: Pick<TemplateDefinition, "config">): InboundSecrets {
  const used = placeholdersOf(template.config);
  const security = objectAt(template.config.streamSettings)?.security;
  const secrets: InboundSecrets = {};
  if (String(security).toLowerCase() === "reality" || used.some((name) => name.startsWith("reality_"))) {
    const keys = generateRealityKeys();
    secrets.reality_private_key = keys.privateKey;
    secrets.reality_public_key = keys.publicKey;
    secrets.reality_short_id = generateShortId();
  }
  if (used.includes("ss2022_server_key")) {
    const method = objectAt(template.config.settings)?.method;
    const is2022 = shadowsocks2022Method(typeof method === "string" ? method : "");
    secrets.ss2022_server_key =
      is2022 === undefined ? randomBytes(32).toString("base64") : generateSs2022Key(is2022);
  }
  return secrets;
}
