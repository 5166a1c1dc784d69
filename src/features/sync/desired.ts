// The desired state of one inbound on one core, as builder output: the rendered template built for
// the core's flavor plus one built user per active grant. Pure, so the service can check an inbound
// or a grant (and answer 422) before anything is stored or sent. (desiredInboundInSlices is the same
// function for thousands of grants, letting the event loop in between slices.)
import {
  API_INBOUND_TAGS,
  type CoreFlavor,
  type CoreProtocol,
  type Problem,
} from "../../cores/core-types.ts";
import { buildInbound, buildUser } from "../../cores/inbound-builder/build.ts";
import type { BuiltInbound, BuiltUser } from "../../cores/inbound-builder/built.ts";
import { InlineBatches } from "../../cores/inbound-builder/inline-users.ts";
import { type BuildTarget, layoutFlavor, targetLayout } from "../../cores/wire-layout.ts";
import { syncBreather } from "../../lib/breather.ts";
import type { JsonObject, JsonValue } from "../../lib/json.ts";
import { objectAt, type TemplateDefinition } from "../templates/definition.ts";
import { type InboundSecrets, prepareInboundJson } from "../templates/prepare.ts";
import { type RenderResult, renderTemplate } from "../templates/render.ts";
import type { Template } from "../templates/templates.schemas.ts";
import { newCredential } from "./credentials.ts";

export type GrantSpec = { proxyUserId: string; credential: string; level: number };

export type InboundSpec = {
  template: TemplateDefinition;
  protocol: CoreProtocol;
  shadowsocksMethod: string | null;
  tag: string;
  port: number;
  values: Readonly<Record<string, JsonValue>>;
  secrets: InboundSecrets;
  certificate?: CertificateMaterial;
  /** The active grants, in a stable order. */
  grants: GrantSpec[];
};

export type CertificateMaterial = { domain: string; certificatePem: string; keyPem: string };

/** The spec of one inbound from its stored parts. */
export function inboundSpec(
  template: Template,
  inbound: { tag: string; port: number; variable_values: Readonly<Record<string, JsonValue>> },
  secrets: InboundSecrets,
  certificate: CertificateMaterial | undefined,
  grants: readonly { proxy_user_id: string; credential: string; level: number }[],
): InboundSpec {
  const method = objectAt(template.config.settings)?.method;
  return {
    template: { config: template.config, variables: template.variables, client_flow: template.client_flow },
    protocol: template.protocol,
    shadowsocksMethod: template.protocol === "shadowsocks" && typeof method === "string" ? method : null,
    tag: inbound.tag,
    port: inbound.port,
    values: inbound.variable_values,
    secrets,
    ...(certificate === undefined ? {} : { certificate }),
    grants: grants.map((g) => ({ proxyUserId: g.proxy_user_id, credential: g.credential, level: g.level })),
  };
}

/** `inbound` is undefined when the core should hold nothing (V2Ray shadowsocks without a user). */
export type DesiredInbound = { inbound: BuiltInbound | undefined; users: BuiltUser[] };

export type DesiredResult =
  | { ok: true; value: DesiredInbound }
  | { ok: false; code: "invalid_inbound" | "core_capacity"; problems: Problem[] };

/**
 * V2Ray 4.x shadowsocks inbounds hold exactly one user, given when the inbound is added; they take
 * no AddUser. Everywhere else users are added to the inbound through the API.
 */
export function holdsUserInline(protocol: CoreProtocol, flavor: CoreFlavor): boolean {
  return protocol === "shadowsocks" && flavor === "v2ray";
}

/** `target`: the server's wire layout (a bare flavor means its newest layout, e.g. for checks). */
export function desiredInbound(spec: InboundSpec, target: BuildTarget): DesiredResult {
  const layout = targetLayout(target);
  const inline = holdsUserInline(spec.protocol, layoutFlavor(layout));
  const [first, ...more] = spec.grants;
  if (inline && more.length > 0) {
    const message = "a V2Ray 4.x shadowsocks inbound holds exactly one user";
    return { ok: false, code: "core_capacity", problems: [{ path: "grants", message }] };
  }
  if (inline && first === undefined) return { ok: true, value: { inbound: undefined, users: [] } };
  const prepared = prepareInboundJson(spec.template, {
    values: spec.values,
    builtins: builtinsOf(spec),
    ...(spec.certificate === undefined ? {} : { certificate: spec.certificate }),
    ...(inline && first !== undefined ? { clients: [inlineClient(first)] } : {}),
  });
  if (!prepared.ok) return invalid(prepared.problems);
  const built = buildInbound(prepared.json, layout, { reservedTags: [...API_INBOUND_TAGS] });
  if (!built.ok) return invalid(built.problems);
  if (inline) return { ok: true, value: { inbound: built.value, users: [] } };
  const users: BuiltUser[] = [];
  const problems: Problem[] = [];
  spec.grants.forEach((grant, index) => {
    const user = buildUser(spec.protocol, layout, {
      email: grant.proxyUserId,
      level: grant.level,
      credential: grant.credential,
      ...(spec.protocol === "vless" ? { flow: spec.template.client_flow } : {}),
      ...(built.value.ref.shadowsocksMethod === undefined
        ? {}
        : { shadowsocksMethod: built.value.ref.shadowsocksMethod }),
    });
    if (user.ok) users.push(user.value);
    else problems.push(...user.problems.map((p) => ({ ...p, path: `grants[${index}].${p.path}` })));
  });
  return problems.length > 0 ? invalid(problems) : { ok: true, value: { inbound: built.value, users } };
}

/**
 * Users built per slice (desiredInboundInSlices, desiredInlineInSlices), the event loop let in between:
 * 1,000 were 20–60 ms of building and encoding under load during a cold start; 500 is half of that.
 */
const BUILD_SLICE = 500;

/**
 * desiredInbound for many grants, built a slice at a time with the event loop let in between (an
 * inbound of 60,000 users is a few hundred milliseconds of building): same result, same problems.
 */
export async function desiredInboundInSlices(spec: InboundSpec, target: BuildTarget): Promise<DesiredResult> {
  if (spec.grants.length <= BUILD_SLICE) return desiredInbound(spec, target);
  let inbound: BuiltInbound | undefined;
  const users: BuiltUser[] = [];
  for (let from = 0; from < spec.grants.length; from += BUILD_SLICE) {
    await syncBreather();
    const slice = desiredInbound({ ...spec, grants: spec.grants.slice(from, from + BUILD_SLICE) }, target);
    // A refusal is worked out again over all grants, so its paths number the grants as given.
    if (!slice.ok) return desiredInbound(spec, target);
    inbound ??= slice.value.inbound;
    for (const user of slice.value.users) users.push(user);
  }
  return { ok: true, value: { inbound, users } };
}

/** An inbound to put on a core with its users inline as far as `maxRequestBytes` allows. */
export type DesiredInline = {
  /** The AddInbound to send: the built inbound with the first `inlined` users in it. */
  request: BuiltInbound | undefined;
  inlined: number;
  /** The users past the cap (or all, where users cannot go inline): they go by AddUser. */
  rest: BuiltUser[];
};

export type DesiredInlineResult = { ok: true; value: DesiredInline } | Extract<DesiredResult, { ok: false }>;

/**
 * desiredInboundInSlices then withInlineUsersInSlices, for a full apply, with the same result: each
 * slice of built users is appended to the AddInbound request as soon as it is built and dropped, so
 * the built users of an inbound (about 800 bytes of heap each: 20,000 an inbound, twelve inbounds at
 * once during a cold start) are never held together; only those past the cap are kept, for AddUser.
 * Nothing is sent before the whole inbound has built: a refusal is the same as desiredInbound's.
 */
export async function desiredInlineInSlices(
  spec: InboundSpec,
  target: BuildTarget,
  maxRequestBytes: number,
): Promise<DesiredInlineResult> {
  if (holdsUserInline(spec.protocol, layoutFlavor(targetLayout(target)))) {
    const whole = desiredInbound(spec, target);
    return whole.ok ? { ok: true, value: { request: whole.value.inbound, inlined: 0, rest: [] } } : whole;
  }
  let batches: InlineBatches | undefined;
  const rest: BuiltUser[] = [];
  for (let from = 0; from === 0 || from < spec.grants.length; from += BUILD_SLICE) {
    await syncBreather();
    const slice = desiredInbound({ ...spec, grants: spec.grants.slice(from, from + BUILD_SLICE) }, target);
    // A refusal is worked out again over all grants, so its paths number the grants as given.
    if (!slice.ok) {
      const whole = desiredInbound(spec, target);
      if (!whole.ok) return whole;
      throw new Error(`inbound ${spec.tag}: a slice of its grants was refused, all of them were not`);
    }
    const built = slice.value.inbound;
    if (built === undefined) return { ok: true, value: { request: undefined, inlined: 0, rest: [] } };
    batches ??= new InlineBatches(built, maxRequestBytes, syncBreather);
    for (const user of await batches.add(slice.value.users)) rest.push(user);
  }
  const split = (batches as InlineBatches).finish();
  return { ok: true, value: { request: split.inbound, inlined: split.inlined, rest } };
}

/**
 * Whether the inbound builds for `flavor`, with a stand-in user where the core needs one to hold
 * the inbound at all (V2Ray shadowsocks), so an inbound without grants is checked too.
 */
export function checkInbound(spec: InboundSpec, target: BuildTarget): DesiredResult {
  const flavor = layoutFlavor(targetLayout(target));
  if (!holdsUserInline(spec.protocol, flavor) || spec.grants.length > 0) return desiredInbound(spec, target);
  const method = spec.shadowsocksMethod ?? undefined;
  const sample = {
    proxyUserId: "u-0000000000000000",
    credential: newCredential("shadowsocks", method),
    level: 0,
  };
  return desiredInbound({ ...spec, grants: [sample] }, target);
}

/** The template rendered for this inbound without certificate material: what its links are read from. */
export function renderForLinks(spec: Omit<InboundSpec, "grants">): RenderResult {
  const rendered = renderTemplate(
    spec.template.config,
    spec.template.variables,
    spec.values,
    builtinsOf(spec),
  );
  if (!rendered.ok) return { ok: false, problems: rendered.problems.map(renamePath) };
  return rendered;
}

function builtinsOf(spec: Omit<InboundSpec, "grants">) {
  return {
    port: spec.port,
    tag: spec.tag,
    ...(spec.certificate === undefined ? {} : { domain: spec.certificate.domain }),
    ...spec.secrets,
  };
}

function inlineClient(grant: GrantSpec): JsonObject {
  return { email: grant.proxyUserId, password: grant.credential, level: grant.level };
}

function invalid(problems: Problem[]): DesiredResult {
  return { ok: false, code: "invalid_inbound", problems: problems.map(renamePath) };
}

/** Render problems name `values.<variable>`; builder problems are paths in the rendered inbound. */
function renamePath(problem: Problem): Problem {
  if (problem.path.startsWith("values."))
    return { ...problem, path: `variable_values.${problem.path.slice(7)}` };
  if (problem.path.startsWith("grants") || problem.path.startsWith("variable_values.")) return problem;
  return { ...problem, path: problem.path === "" ? "config" : `config.${problem.path}` };
}
