// GET/PUT /api/subscription-settings: how /sub chooses formats (User-Agent rules), the base documents
// of mihomo and sing-box, the headers clients read, whether /sub/{user_id} still answers, and the
// texts of the subscription page.
import { type Static, Type } from "typebox";

const Format = Type.Union(
  [
    Type.Literal("base64"),
    Type.Literal("links"),
    Type.Literal("mihomo"),
    Type.Literal("sing-box"),
    Type.Literal("xray-json"),
  ],
  { description: "base64, links, mihomo, sing-box or xray-json" },
);
/** `line`: one line (headers, headings); `text`: may hold line feeds and tabs (lib/text.ts). */
const OptionalText = (maxLength: number, description: string, format: "line" | "text" = "line") =>
  Type.Union([Type.String({ maxLength, format }), Type.Null()], { description });

/** A placeholder entry's name: one line of text; {date} is the only placeholder. */
const PlaceholderText = (description: string) =>
  Type.String({ minLength: 1, maxLength: 200, format: "line", description });

export const UaRule = Type.Object(
  {
    pattern: Type.String({
      minLength: 1,
      maxLength: 500,
      description:
        "a case-insensitive pattern in the regular-expression subset that matches in linear time: " +
        "literals, ., classes, \\d \\w \\s \\b, ^ $, groups, |, * + ? {n,m} (m ≤ 100); no backreferences " +
        "or lookaround (422 subscription_settings_invalid)",
    }),
    format: Format,
  },
  { additionalProperties: false },
);

/** An operator's header: an HTTP token for a name, a one-line template for a value (user-values.ts). */
export const CustomHeader = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$",
      description: "an HTTP field name (token characters); not one Portcullis sends itself",
    }),
    value: Type.String({
      minLength: 1,
      maxLength: 1000,
      format: "line",
      description:
        "a template: {USERNAME} {DATA_LEFT} {DAYS_LEFT} {EXPIRE_DATE} {STATUS} {SUBSCRIPTION_URL}; characters outside printable ASCII are sent percent-encoded",
    }),
  },
  { additionalProperties: false },
);

const Fields = {
  ua_rules: Type.Array(UaRule, {
    maxItems: 100,
    description: "checked in order against the User-Agent; the first match gives the format; none: base64",
  }),
  mihomo_base: Type.String({
    maxLength: 262_144,
    description:
      'YAML: the mihomo document around the proxies; "{{all}}" in a group\'s proxies is every proxy',
  }),
  singbox_base: Type.Record(Type.String(), Type.Unknown(), {
    description:
      'the sing-box 1.12 document around the outbounds; "{{all}}" in a selector/urltest is every one',
  }),
  update_interval_hours: Type.Integer({ minimum: 1, maximum: 168, description: "Profile-Update-Interval" }),
  support_url: OptionalText(2048, "Support-Url (null: not sent)"),
  announce: OptionalText(500, "Announce, sent as base64: (Happ, v2RayTun); null: not sent", "text"),
  profile_web_page_url: OptionalText(
    2048,
    "Profile-Web-Page-Url (Hiddify, Happ); null: public_url + the user's /sub path when public_url is set",
  ),
  announce_url: OptionalText(2048, "Announce-Url (Happ, v2RayTun); null: not sent"),
  routing: OptionalText(8192, "Routing (Happ): a happ://routing/… link; null: not sent"),
  hide_settings: Type.Boolean({ description: "Hide-Settings: 1 (Happ) when true" }),
  custom_headers: Type.Array(CustomHeader, {
    maxItems: 16,
    description: "headers sent with every /sub answer, values filled per user",
  }),
  public_url: OptionalText(
    2048,
    "the service's public base URL (https://sub.example.com): Profile-Web-Page-Url and users' subscription_url",
  ),
  allow_by_id: Type.Boolean({
    description: "whether /sub/{user_id} answers (the seed's URL); tokens always do",
  }),
  page_title: OptionalText(200, "the subscription page's heading (null: the service's name)"),
  page_note: OptionalText(2000, "a text shown on the subscription page (plain text)", "text"),
  leave_out_offline_servers: Type.Boolean({
    description:
      "whether /sub leaves out the entries of servers offline for longer than offline_minutes (back at once when online)",
  }),
  offline_minutes: Type.Integer({
    minimum: 1,
    maximum: 10_080,
    description: "how long a server must be offline before its entries leave /sub (minutes)",
  }),
  placeholder_disabled: PlaceholderText(
    "the name of the one entry a disabled user's subscription has instead of links",
  ),
  placeholder_expired: PlaceholderText(
    "the entry's name for an expired user; {date} is expire_at's day (UTC, YYYY-MM-DD)",
  ),
  placeholder_limited: PlaceholderText(
    "the entry's name for a user whose data limit is reached and whose usage never resets",
  ),
  placeholder_limited_until: PlaceholderText(
    "the entry's name for a user whose data limit is reached until the next reset; {date} is its day (UTC, YYYY-MM-DD)",
  ),
  default_device_limit: Type.Integer({
    minimum: 0,
    maximum: 1000,
    description:
      "the device_limit of users whose own is null: devices (HWIDs) whose apps get the links; 0: unlimited, not checked (the default)",
  }),
  require_hwid: Type.Boolean({
    description:
      "whether a fetch without an HWID (x-hwid) gets a placeholder instead of the links, for users whose devices are checked (default false)",
  }),
  placeholder_device_limit: PlaceholderText(
    "the entry's name for a fetch from a new device over the user's device limit",
  ),
  placeholder_hwid_required: PlaceholderText(
    "the entry's name for a fetch without a usable HWID when require_hwid is on (or with an HWID that cannot be one)",
  ),
};

export const SubscriptionSettings = Type.Object(Fields);
export type SubscriptionSettings = Static<typeof SubscriptionSettings>;

export const SubscriptionSettingsUpdate = Type.Partial(Type.Object(Fields, { additionalProperties: false }), {
  additionalProperties: false,
});
export type SubscriptionSettingsUpdate = Static<typeof SubscriptionSettingsUpdate>;
