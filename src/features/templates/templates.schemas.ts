// The template resource: an Xray-style inbound object with {{placeholders}}, its declared variables,
// and facts read from it when saved (supported cores, protocol, transport, security).
import { type Static, Type } from "typebox";
import type { JsonObject } from "../../lib/json.ts";
import { Timestamp, Uuid } from "../../lib/schemas.ts";
import { VLESS_VISION_FLOW } from "../../protocols/vless.ts";
import type { TemplateVariable } from "./render.ts";

const Name = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: "\\S",
  format: "line",
  description: "1-128 characters, trimmed; one line: no control characters, line breaks or bidi overrides",
});
const Description = Type.String({ maxLength: 2000, format: "text" });
const Config = Type.Record(Type.String(), Type.Unknown(), {
  description:
    "Xray-style inbound object (protocol, settings, streamSettings, sniffing) with {{placeholders}}",
});
const ClientFlow = Type.Union([Type.Literal(""), Type.Literal(VLESS_VISION_FLOW)], {
  description: "VLESS only: the flow every user of the template's inbounds gets",
});
const Flavor = Type.Union([Type.Literal("xray"), Type.Literal("v2ray")]);

export const Variable = Type.Object({
  name: Type.String(),
  description: Type.String(),
  default: Type.Unknown({ description: "any JSON or null; its type is the variable's type" }),
  required: Type.Boolean(),
});

const VariableInput = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64, description: "^[a-z][a-z0-9_]{0,63}$, not a built-in" }),
    description: Type.Optional(Type.String({ maxLength: 1000 })),
    default: Type.Optional(Type.Unknown()),
    required: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
const Variables = Type.Array(VariableInput, { maxItems: 64 });

export const Template = Type.Object({
  id: Uuid,
  name: Type.String(),
  description: Type.String(),
  config: Config,
  variables: Type.Array(Variable),
  client_flow: ClientFlow,
  supported_cores: Type.Array(Flavor, { description: "core flavors the template builds on" }),
  protocol: Type.Union([
    Type.Literal("vless"),
    Type.Literal("vmess"),
    Type.Literal("trojan"),
    Type.Literal("shadowsocks"),
  ]),
  security: Type.Union([Type.Literal("none"), Type.Literal("tls"), Type.Literal("reality")]),
  network: Type.String(),
  needs_certificate: Type.Boolean(),
  uses_reality: Type.Boolean(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
/** The schema's type with config and variables as the JSON types the template helpers take. */
export type Template = Omit<Static<typeof Template>, "config" | "variables"> & {
  config: JsonObject;
  variables: TemplateVariable[];
};

export const TemplateCreate = Type.Object(
  {
    name: Name,
    description: Type.Optional(Description),
    config: Config,
    variables: Type.Optional(Variables),
    client_flow: Type.Optional(ClientFlow),
  },
  { additionalProperties: false },
);
export type TemplateCreate = Static<typeof TemplateCreate>;

export const TemplateUpdate = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Description),
    config: Type.Optional(Config),
    variables: Type.Optional(Variables),
    client_flow: Type.Optional(ClientFlow),
  },
  { additionalProperties: false },
);
export type TemplateUpdate = Static<typeof TemplateUpdate>;

export const StarterOutcome = Type.Object({
  name: Type.String(),
  status: Type.Union([Type.Literal("installed"), Type.Literal("skipped")]),
  supported_cores: Type.Optional(Type.Array(Type.Union([Type.Literal("xray"), Type.Literal("v2ray")]))),
  reason: Type.Optional(Type.String({ description: "why it was skipped" })),
});
export type StarterOutcome = Static<typeof StarterOutcome>;
