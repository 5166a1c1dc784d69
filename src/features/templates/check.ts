// Save-time validation of a template: its own rules (variables, literal protocol/transport, no users,
// no certificates), then a render with sample built-ins and one sample user, built by the inbound
// builder for each core flavor. The flavors that build are the template's supported cores.
import { CORE_FLAVORS, CORE_PROTOCOLS, type CoreFlavor, type Problem } from "../../cores/core-types.ts";
import { buildInbound } from "../../cores/inbound-builder/build.ts";
import { type JsonObject, type JsonValue, joinPath } from "../../lib/json.ts";
import { generateSs2022Key, shadowsocks2022Method } from "../../protocols/shadowsocks.ts";
import { generateSelfSigned } from "../certificates/self-signed.ts";
import { objectAt, type TemplateDefinition } from "./definition.ts";
import { generateInboundSecrets, type InboundCertificate, prepareInboundJson } from "./prepare.ts";
import { type Builtins, isBuiltin, placeholderUses, type TemplateVariable, VARIABLE_NAME } from "./render.ts";

export type CheckResult =
  | { ok: true; supportedCores: CoreFlavor[] }
  | { ok: false; code: "template_invalid" | "template_unsupported"; problems: Problem[] };

/** What a variable without a default is rendered as when the template is checked. */
export const SAMPLE_VALUE = "sample";
export const SAMPLE_BUILTINS = { port: 443, tag: "template-check", domain: "example.com" } as const;
const SAMPLE_EMAIL = "template-check";

export async function checkTemplate(definition: TemplateDefinition): Promise<CheckResult> {
  const invalid = [...variableProblems(definition.variables), ...configProblems(definition)];
  if (invalid.length > 0) return { ok: false, code: "template_invalid", problems: invalid };
  const sample = prepareInboundJson(definition, {
    values: sampleValues(definition.variables),
    builtins: { ...SAMPLE_BUILTINS, ...generateInboundSecrets(definition) } satisfies Builtins,
    certificate: await sampleCertificate(),
    clients: [sampleClient(definition)],
  });
  if (!sample.ok) {
    const problems = sample.problems.map((p) => ({ ...p, path: joinPath("config", p.path) }));
    return { ok: false, code: "template_invalid", problems };
  }
  const supportedCores: CoreFlavor[] = [];
  const problems: Problem[] = [];
  for (const flavor of CORE_FLAVORS) {
    const built = buildInbound(sample.json, flavor);
    if (built.ok) supportedCores.push(flavor);
    else problems.push(...built.problems.map((p) => ({ ...p, path: `${flavor}: ${clientPath(p.path)}` })));
  }
  if (supportedCores.length === 0) return { ok: false, code: "template_unsupported", problems };
  return { ok: true, supportedCores };
}

function variableProblems(variables: readonly TemplateVariable[]): Problem[] {
  const problems: Problem[] = [];
  const seen = new Map<string, number>();
  variables.forEach((variable, index) => {
    const path = `variables[${index}].name`;
    if (!VARIABLE_NAME.test(variable.name))
      problems.push({ path, message: `must match ${VARIABLE_NAME.source}` });
    else if (isBuiltin(variable.name))
      problems.push({ path, message: "is the name of a built-in placeholder" });
    const first = seen.get(variable.name);
    if (first === undefined) seen.set(variable.name, index);
    else problems.push({ path, message: `duplicates variables[${first}]` });
  });
  return problems;
}

function isLiteral(value: JsonValue | undefined): boolean {
  return typeof value === "string" && !value.includes("{{");
}

function configProblems({ config, client_flow }: TemplateDefinition): Problem[] {
  const problems: Problem[] = [];
  const add = (path: string, message: string) => problems.push({ path: joinPath("config", path), message });
  keyProblems(config, "", add);
  const protocols: readonly JsonValue[] = CORE_PROTOCOLS;
  if (!protocols.includes(config.protocol ?? null))
    add("protocol", `must be one of ${CORE_PROTOCOLS.join(", ")}`);
  for (const key of ["port", "tag"]) {
    const value = config[key];
    const use = value === undefined ? undefined : placeholderUses(value)[0];
    if (value !== undefined && !(use?.exact && use.name === key)) {
      add(key, `must be "{{${key}}}" or absent: every inbound gets its own`);
    }
  }
  const settings = objectAt(config.settings);
  const clients = settings?.clients;
  if (clients !== undefined && !(Array.isArray(clients) && clients.length === 0)) {
    add("settings.clients", "must be absent or empty: users are added to each inbound through the core API");
  }
  if (config.protocol === "shadowsocks" && !isLiteral(settings?.method)) {
    add("settings.method", "is required and must be written out (no placeholder)");
  }
  const stream = objectAt(config.streamSettings);
  for (const key of ["network", "security"]) {
    if (stream?.[key] !== undefined && !isLiteral(stream[key])) {
      add(`streamSettings.${key}`, "must be a string written out (no placeholder)");
    }
  }
  if (objectAt(stream?.tlsSettings)?.certificates !== undefined) {
    add("streamSettings.tlsSettings.certificates", "must be absent: the inbound's certificate is injected");
  }
  if (client_flow !== "" && config.protocol !== "vless") {
    problems.push({ path: "client_flow", message: "only VLESS users have a flow" });
  }
  return problems;
}

function keyProblems(value: JsonValue, path: string, add: (path: string, message: string) => void): void {
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) keyProblems(item, joinPath(path, index), add);
  } else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes("{{")) add(joinPath(path, key), "placeholders belong in values, not in keys");
      keyProblems(item, joinPath(path, key), add);
    }
  }
}

function sampleValues(variables: readonly TemplateVariable[]): Record<string, JsonValue> {
  const values: Record<string, JsonValue> = {};
  for (const variable of variables) if (variable.default === null) values[variable.name] = SAMPLE_VALUE;
  return values;
}

/** One user of the template's protocol, so the check covers the user shape (flow, key length). */
function sampleClient({ config, client_flow }: TemplateDefinition): JsonObject {
  const email = SAMPLE_EMAIL;
  if (config.protocol === "vless") {
    return { id: crypto.randomUUID(), email, ...(client_flow === "" ? {} : { flow: client_flow }) };
  }
  if (config.protocol === "vmess") return { id: crypto.randomUUID(), email };
  const method = objectAt(config.settings)?.method;
  const is2022 = typeof method === "string" ? shadowsocks2022Method(method) : undefined;
  if (is2022 !== undefined) return { password: generateSs2022Key(is2022), email };
  return { password: "template-check-password", email };
}

/** The builder reports the sample user's flow under the client; the operator wrote client_flow. */
function clientPath(path: string): string {
  return path === "settings.clients[0].flow" ? "client_flow" : path;
}

let certificate: Promise<InboundCertificate> | undefined;

/** A throwaway self-signed pair, made once per process, standing in for the inbound's certificate. */
function sampleCertificate(): Promise<InboundCertificate> {
  certificate ??= generateSelfSigned({ domain: SAMPLE_BUILTINS.domain }).then(
    (made) => ({ certificatePem: made.certificatePem, keyPem: made.privateKeyPem }),
    (error: unknown) => {
      certificate = undefined;
      throw error;
    },
  );
  return certificate;
}
