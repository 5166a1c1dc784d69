// A host as the form holds it (texts, lists, the fragment's three parts, the noise as JSON text) and
// back into the API's body: an empty text is "the inbound's own" (null), every field is sent so a save
// replaces the host as the form shows it. The API's field errors (`body.fragment.packets`) are mapped
// to the form's names (`fragment_packets`).
import type { Host, HostInput } from "../../api/types.ts";

export const SECURITIES = ["inbound", "tls", "none"] as const satisfies readonly Host["security"][];
export const ALPNS = ["h2", "http/1.1", "h3"] as const;
export const EXCLUDABLE = ["links", "mihomo", "sing-box", "xray-json"] as const;
export const FINGERPRINTS = [
  "chrome",
  "firefox",
  "safari",
  "ios",
  "android",
  "edge",
  "360",
  "qq",
  "random",
  "randomized",
] as const satisfies readonly NonNullable<Host["fingerprint"]>[];

export type HostValues = {
  address: string;
  port: number | string;
  remark: string;
  sni: string[];
  host: string[];
  path: string;
  alpn: string[];
  fingerprint: string | null;
  security: Host["security"];
  allow_insecure: boolean;
  is_disabled: boolean;
  follows_health: boolean;
  exclude_from: string[];
  mux_concurrency: number | string;
  fragment_packets: string;
  fragment_length: string;
  fragment_interval: string;
  /** JSON text of the noise packets; "" = none */
  noise: string;
};

export const NEW_HOST: HostValues = {
  address: "",
  port: "",
  remark: "",
  sni: [],
  host: [],
  path: "",
  alpn: [],
  fingerprint: null,
  security: "inbound",
  allow_insecure: false,
  is_disabled: false,
  follows_health: false,
  exclude_from: [],
  mux_concurrency: "",
  fragment_packets: "",
  fragment_length: "",
  fragment_interval: "",
  noise: "",
};

export function hostValues(host: Host): HostValues {
  return {
    address: host.address ?? "",
    port: host.port ?? "",
    remark: host.remark ?? "",
    sni: host.sni,
    host: host.host,
    path: host.path ?? "",
    alpn: host.alpn ?? [],
    fingerprint: host.fingerprint,
    security: host.security,
    allow_insecure: host.allow_insecure,
    is_disabled: host.is_disabled,
    follows_health: host.follows_health,
    exclude_from: host.exclude_from,
    mux_concurrency: host.mux?.concurrency ?? "",
    fragment_packets: host.fragment?.packets ?? "",
    fragment_length: host.fragment?.length ?? "",
    fragment_interval: host.fragment?.interval ?? "",
    noise: host.noise === null ? "" : JSON.stringify(host.noise, null, 2),
  };
}

const orNull = (text: string) => (text.trim() === "" ? null : text.trim());

/**
 * The body for create and update. Texts the API checks (a number typed as text, a fragment with a
 * part missing) are sent as typed, for the API to refuse on the field. Throws SyntaxError when the
 * noise is not JSON.
 */
export function hostBody(values: HostValues): HostInput {
  const fragment = [values.fragment_packets, values.fragment_length, values.fragment_interval];
  return {
    address: orNull(values.address),
    port: values.port === "" ? null : Number(values.port),
    remark: orNull(values.remark),
    sni: values.sni,
    host: values.host,
    path: orNull(values.path),
    alpn: values.alpn.length === 0 ? null : (values.alpn as NonNullable<Host["alpn"]>),
    fingerprint: values.fingerprint as Host["fingerprint"],
    security: values.security,
    allow_insecure: values.allow_insecure,
    is_disabled: values.is_disabled,
    follows_health: values.follows_health,
    exclude_from: values.exclude_from as Host["exclude_from"],
    mux: values.mux_concurrency === "" ? null : { concurrency: Number(values.mux_concurrency) },
    fragment: fragment.every((part) => part.trim() === "")
      ? null
      : {
          packets: values.fragment_packets.trim(),
          length: values.fragment_length.trim(),
          interval: values.fragment_interval.trim(),
        },
    noise: values.noise.trim() === "" ? null : (JSON.parse(values.noise) as Host["noise"]),
  };
}

/** The form field an API error path (`body.fragment.packets`, `body.sni.1`) belongs to. */
export function fieldOf(path: string): keyof HostValues | undefined {
  const [field, part] = path.replace(/^body\.?/, "").split(".");
  if (field === "mux") return "mux_concurrency";
  if (field === "fragment")
    return part === "length"
      ? "fragment_length"
      : part === "interval"
        ? "fragment_interval"
        : "fragment_packets";
  return field !== undefined && field in NEW_HOST ? (field as keyof HostValues) : undefined;
}
