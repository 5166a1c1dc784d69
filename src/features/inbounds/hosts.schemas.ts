// /api/servers/{server_id}/inbounds/{inbound_id}/hosts (issue 48): an inbound's other addresses.
// Every text is checked here, at the edge, for what its strictest reader takes: names and paths are
// ASCII without spaces (they go into URIs, YAML and JSON as they are), the remark is one line of
// text without control characters, line or paragraph separators, or bidirectional overrides.
import { type Static, Type } from "typebox";
import { Timestamp, Uuid } from "../../lib/schemas.ts";
import { FINGERPRINTS } from "../../links/types.ts";
import type { HostFormat, HostSecurity } from "./host-spec.ts";

/** A DNS name (letters, digits, hyphens, dots) or an IPv4 / IPv6 literal (no brackets). */
const NAME_PATTERN =
  "^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)$";
const Name = (description: string) =>
  Type.String({ minLength: 1, maxLength: 253, pattern: NAME_PATTERN, description });
const RANGE = "^[0-9]{1,5}(?:-[0-9]{1,5})?$";

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T, description: string) =>
  Type.Union([schema, Type.Null()], { description });

const Fields = {
  address: Nullable(
    Name("a DNS name or an IP literal"),
    "where clients connect; null: the server's hostname",
  ),
  port: Nullable(Type.Integer({ minimum: 1, maximum: 65535 }), "null: the inbound's port"),
  remark: Nullable(
    Type.String({ minLength: 1, maxLength: 200, format: "line" }),
    "the entry's name, a template: {SERVER} {PROTOCOL} {TRANSPORT} {USERNAME} {DATA_LEFT} {DAYS_LEFT} {EXPIRE_DATE} {STATUS}; null: the inbound's (\"<server> <tag>\")",
  ),
  sni: Type.Array(Name("a server name"), {
    maxItems: 16,
    description: "TLS/REALITY server names; one is chosen per fetch; empty: the inbound's",
  }),
  host: Type.Array(Name("a Host header"), {
    maxItems: 16,
    description: "Host header / gRPC authority values; one is chosen per fetch; empty: the inbound's",
  }),
  path: Nullable(
    Type.String({ minLength: 1, maxLength: 500, pattern: "^/[\\x21-\\x7e]*$" }),
    "WS/HTTPUpgrade/XHTTP path, gRPC service name (without the /); null: the inbound's",
  ),
  alpn: Nullable(
    Type.Array(Type.Union([Type.Literal("h3"), Type.Literal("h2"), Type.Literal("http/1.1")]), {
      minItems: 1,
      maxItems: 3,
      uniqueItems: true,
    }),
    "TLS ALPN; null: the inbound's",
  ),
  fingerprint: Nullable(
    Type.Union(FINGERPRINTS.map((name) => Type.Literal(name))),
    "uTLS fingerprint; null: the inbound's",
  ),
  security: Type.Union([Type.Literal("inbound"), Type.Literal("none"), Type.Literal("tls")], {
    description:
      "inbound: the inbound's own; tls: TLS terminated in front of the inbound (a CDN or reverse proxy before a plain WS/HTTPUpgrade/XHTTP/gRPC inbound); none: plain",
  }),
  allow_insecure: Type.Boolean({ description: "clients skip certificate checks (TLS only); off unless set" }),
  mux: Nullable(
    Type.Object(
      { concurrency: Type.Integer({ minimum: 1, maximum: 1024 }) },
      { additionalProperties: false },
    ),
    "multiplexing (xray-json's mux)",
  ),
  fragment: Nullable(
    Type.Object(
      {
        packets: Type.String({ pattern: "^(?:tlshello|[0-9]{1,5}(?:-[0-9]{1,5})?)$" }),
        length: Type.String({ pattern: RANGE }),
        interval: Type.String({ pattern: RANGE }),
      },
      { additionalProperties: false },
    ),
    "TLS ClientHello fragmentation (xray-json's freedom fragment)",
  ),
  noise: Nullable(
    Type.Array(
      Type.Object(
        {
          type: Type.Union([
            Type.Literal("rand"),
            Type.Literal("str"),
            Type.Literal("base64"),
            Type.Literal("hex"),
          ]),
          packet: Type.String({ minLength: 1, maxLength: 256, pattern: "^[\\x20-\\x7e]*$" }),
          delay: Type.String({ pattern: RANGE }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 8 },
    ),
    "UDP noise packets (xray-json's freedom noises)",
  ),
  is_disabled: Type.Boolean({ description: "a disabled host gives no entry" }),
  exclude_from: Type.Array(
    Type.Union([
      Type.Literal("links"),
      Type.Literal("mihomo"),
      Type.Literal("sing-box"),
      Type.Literal("xray-json"),
    ]),
    { uniqueItems: true, description: "formats without this entry (links: base64 and plain)" },
  ),
  follows_health: Type.Boolean({
    description: "left out while the server's status is offline or error",
  }),
};

export const Host = Type.Object({
  id: Uuid,
  inbound_id: Uuid,
  position: Type.Integer({ description: "0-based order of the entries" }),
  ...Fields,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Host = Static<typeof Host>;

const CreateFields = {
  address: Type.Optional(Fields.address),
  port: Type.Optional(Fields.port),
  remark: Type.Optional(Fields.remark),
  sni: Type.Optional(Fields.sni),
  host: Type.Optional(Fields.host),
  path: Type.Optional(Fields.path),
  alpn: Type.Optional(Fields.alpn),
  fingerprint: Type.Optional(Fields.fingerprint),
  security: Type.Optional(Fields.security),
  allow_insecure: Type.Optional(Fields.allow_insecure),
  mux: Type.Optional(Fields.mux),
  fragment: Type.Optional(Fields.fragment),
  noise: Type.Optional(Fields.noise),
  is_disabled: Type.Optional(Fields.is_disabled),
  exclude_from: Type.Optional(Fields.exclude_from),
  follows_health: Type.Optional(Fields.follows_health),
};

/** Omitted fields: null / empty / false, security `inbound`; the host goes last. */
export const HostCreate = Type.Object(CreateFields, { additionalProperties: false });
export type HostCreate = Static<typeof HostCreate>;
/** The fields present are replaced. */
export const HostUpdate = Type.Object(CreateFields, { additionalProperties: false, minProperties: 1 });
export type HostUpdate = Static<typeof HostUpdate>;

export const HostOrder = Type.Object(
  {
    ids: Type.Array(Uuid, {
      uniqueItems: true,
      maxItems: 100,
      description: "every host of the inbound, once each, in the new order",
    }),
  },
  { additionalProperties: false },
);
export type HostOrder = Static<typeof HostOrder>;

export const HostParams = Type.Object(
  { server_id: Uuid, inbound_id: Uuid, host_id: Uuid },
  { additionalProperties: false },
);

// The literal lists above are host-spec.ts's, written out for TypeBox's types; these fail to compile if they part.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
const _securities: Same<Host["security"], HostSecurity> = true;
const _formats: Same<Host["exclude_from"][number], HostFormat> = true;
void _securities;
void _formats;
