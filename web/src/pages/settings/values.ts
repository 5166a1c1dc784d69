// The subscription settings as the form holds them (texts, the sing-box base as JSON text, keyed
// rules), and back: only the fields that differ from what is stored are sent, so a save changes what
// the operator changed and the audit log names just those fields.
import type {
  SubscriptionFormat,
  SubscriptionSettings,
  SubscriptionSettingsUpdate,
} from "../../api/types.ts";

export type RuleDraft = { key: number; pattern: string; format: SubscriptionFormat };
export type HeaderDraft = { key: number; name: string; value: string };

let lastKey = 0;
/** React's key for a rule or header row (not crypto.randomUUID: it is missing outside secure contexts). */
export function ruleKey(): number {
  lastKey += 1;
  return lastKey;
}

export type Values = {
  public_url: string;
  support_url: string;
  update_interval_hours: number | string;
  announce: string;
  allow_by_id: boolean;
  page_title: string;
  page_note: string;
  ua_rules: RuleDraft[];
  mihomo_base: string;
  singbox_base: string;
  placeholder_disabled: string;
  placeholder_expired: string;
  placeholder_limited: string;
  placeholder_limited_until: string;
  profile_web_page_url: string;
  announce_url: string;
  routing: string;
  hide_settings: boolean;
  custom_headers: HeaderDraft[];
  /** Health in subscriptions: leave out the entries of servers offline for longer than N minutes. */
  leave_out_offline_servers: boolean;
  offline_minutes: number | string;
  /** Device limits at fetch time: kept as stored (this page does not edit them yet; the API does). */
  devices: Devices;
};

type Devices = Pick<
  SubscriptionSettings,
  "default_device_limit" | "require_hwid" | "placeholder_device_limit" | "placeholder_hwid_required"
>;

/** The names of the entry a user who may not connect gets instead of links. */
export const PLACEHOLDER_FIELDS = [
  "placeholder_disabled",
  "placeholder_expired",
  "placeholder_limited",
  "placeholder_limited_until",
] as const;

export function valuesOf(settings: SubscriptionSettings): Values {
  return {
    public_url: settings.public_url ?? "",
    support_url: settings.support_url ?? "",
    update_interval_hours: settings.update_interval_hours,
    announce: settings.announce ?? "",
    allow_by_id: settings.allow_by_id,
    page_title: settings.page_title ?? "",
    page_note: settings.page_note ?? "",
    ua_rules: settings.ua_rules.map((rule) => ({ key: ruleKey(), ...rule })),
    mihomo_base: settings.mihomo_base,
    singbox_base: JSON.stringify(settings.singbox_base, null, 2),
    placeholder_disabled: settings.placeholder_disabled,
    placeholder_expired: settings.placeholder_expired,
    placeholder_limited: settings.placeholder_limited,
    placeholder_limited_until: settings.placeholder_limited_until,
    profile_web_page_url: settings.profile_web_page_url ?? "",
    announce_url: settings.announce_url ?? "",
    routing: settings.routing ?? "",
    hide_settings: settings.hide_settings,
    custom_headers: settings.custom_headers.map((header) => ({ key: ruleKey(), ...header })),
    leave_out_offline_servers: settings.leave_out_offline_servers,
    offline_minutes: settings.offline_minutes,
    devices: {
      default_device_limit: settings.default_device_limit,
      require_hwid: settings.require_hwid,
      placeholder_device_limit: settings.placeholder_device_limit,
      placeholder_hwid_required: settings.placeholder_hwid_required,
    },
  };
}

/** An empty text is "not set" (null) for the API. */
const orNull = (text: string, trim = true): string | null => {
  const value = trim ? text.trim() : text;
  return value.trim() === "" ? null : value;
};

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The PUT body: each field whose value differs from the stored one. Throws SyntaxError when the
 * sing-box base is not JSON (the page does not offer to save then).
 */
export function changesOf(values: Values, stored: SubscriptionSettings): SubscriptionSettingsUpdate {
  const interval = values.update_interval_hours;
  const minutes = values.offline_minutes;
  const next = {
    public_url: orNull(values.public_url),
    support_url: orNull(values.support_url),
    // Not a whole number: sent as typed, for the API to refuse on the field.
    update_interval_hours: typeof interval === "number" ? interval : Number(interval),
    announce: orNull(values.announce),
    allow_by_id: values.allow_by_id,
    page_title: orNull(values.page_title),
    page_note: orNull(values.page_note, false),
    ua_rules: values.ua_rules.map(({ pattern, format }): { pattern: string; format: SubscriptionFormat } => ({
      pattern,
      format,
    })),
    mihomo_base: values.mihomo_base,
    singbox_base: JSON.parse(values.singbox_base) as SubscriptionSettings["singbox_base"],
    // Sent as typed (an empty text too): the API says on the field what it refuses.
    placeholder_disabled: values.placeholder_disabled.trim(),
    placeholder_expired: values.placeholder_expired.trim(),
    placeholder_limited: values.placeholder_limited.trim(),
    placeholder_limited_until: values.placeholder_limited_until.trim(),
    profile_web_page_url: orNull(values.profile_web_page_url),
    announce_url: orNull(values.announce_url),
    routing: orNull(values.routing),
    hide_settings: values.hide_settings,
    // Sent as typed: the API says on the field what it refuses (an empty name, a line break).
    custom_headers: values.custom_headers.map(({ name, value }) => ({ name: name.trim(), value })),
    leave_out_offline_servers: values.leave_out_offline_servers,
    // Not a whole number: sent as typed, for the API to refuse on the field.
    offline_minutes: typeof minutes === "number" ? minutes : Number(minutes),
    ...values.devices,
  } satisfies Required<SubscriptionSettingsUpdate>;
  const body: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(next)) {
    if (!same(value, stored[key as keyof SubscriptionSettings])) body[key] = value;
  }
  return body as SubscriptionSettingsUpdate;
}
