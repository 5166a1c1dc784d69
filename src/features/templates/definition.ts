// What a template is made of (config + variables + client flow) and the facts read from its config:
// protocol, transport, security. Those keys must be literal, so the facts hold for every inbound.
import { CORE_PROTOCOLS, type CoreProtocol } from "../../cores/core-types.ts";
import type { JsonObject, JsonValue } from "../../lib/json.ts";
import { normaliseNetwork } from "../../protocols/streams.ts";
import { VLESS_FLOWS } from "../../protocols/vless.ts";
import type { TemplateVariable } from "./render.ts";

export const CLIENT_FLOWS = ["", ...VLESS_FLOWS] as const;
/** The VLESS flow every user of the template's inbounds gets (Xray keeps flow per client). */
export type ClientFlow = (typeof CLIENT_FLOWS)[number];

export type TemplateDefinition = {
  config: JsonObject;
  variables: TemplateVariable[];
  client_flow: ClientFlow;
};

export const SECURITIES = ["none", "tls", "reality"] as const;
export type TemplateSecurity = (typeof SECURITIES)[number];

export type TemplateFacts = {
  protocol: CoreProtocol;
  security: TemplateSecurity;
  network: string;
  /** settings.method of a shadowsocks template, as written. */
  shadowsocks_method: string | null;
  uses_reality: boolean;
  /** TLS, or {{domain}} used anywhere: the inbound needs a certificate. */
  needs_certificate: boolean;
};

export function objectAt(value: JsonValue | undefined): JsonObject | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? value : undefined;
}

function literal(value: JsonValue | undefined): string | undefined {
  return typeof value === "string" && !value.includes("{{") ? value : undefined;
}

/** Facts of a config that passed checkTemplate; unknown values fall back to the builder's defaults. */
export function describeConfig(config: JsonObject, usesDomain: boolean): TemplateFacts {
  const protocol = CORE_PROTOCOLS.find((name) => name === config.protocol) ?? "vless";
  const stream = objectAt(config.streamSettings);
  const network = (literal(stream?.network) ?? "tcp").toLowerCase();
  const securityText = (literal(stream?.security) ?? "none").toLowerCase();
  const security = SECURITIES.find((name) => name === securityText) ?? "none";
  const method = protocol === "shadowsocks" ? literal(objectAt(config.settings)?.method) : undefined;
  return {
    protocol,
    security,
    network: normaliseNetwork(network) ?? network,
    shadowsocks_method: method ?? null,
    uses_reality: security === "reality",
    needs_certificate: security === "tls" || usesDomain,
  };
}
