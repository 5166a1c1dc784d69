// Subscription settings: stored as one JSON row, read with the defaults filled in, and validated on
// save: every User-Agent rule must compile; the mihomo base must be a YAML mapping whose groups are
// well formed and name only proxies, groups, DIRECT/REJECT or "{{all}}"; the sing-box base must
// validate against the schema of sing-box 1.12 and name no missing outbound. A refusal is 422
// `subscription_settings_invalid` with the JSON path of each problem.
import { Ajv } from "ajv";
import { parse as parseYaml } from "yaml";
import { type ErrorDetail, UnprocessableError } from "../../lib/errors.ts";
import { PatternError, UaPattern } from "../../lib/ua-pattern.ts";
import { DEFAULT_MIHOMO_BASE } from "../../links/formats/mihomo.ts";
import { DEFAULT_SINGBOX_BASE, type Json } from "../../links/formats/singbox.ts";
import { SINGBOX_SCHEMA, singboxDanglingTags } from "../../links/formats/singbox-schema.ts";
import type { YamlValue } from "../../links/formats/yaml.ts";
import { DEFAULT_UA_RULES } from "./default-rules.ts";
import type { SubscriptionSettingsRepository } from "./subscription-settings.repository.ts";
import type { SubscriptionSettings, SubscriptionSettingsUpdate } from "./subscription-settings.schemas.ts";

export const DEFAULT_SETTINGS: SubscriptionSettings = {
  ua_rules: DEFAULT_UA_RULES.map((rule) => ({ ...rule })),
  mihomo_base: DEFAULT_MIHOMO_BASE,
  singbox_base: DEFAULT_SINGBOX_BASE,
  update_interval_hours: 12,
  support_url: null,
  announce: null,
  profile_web_page_url: null,
  announce_url: null,
  routing: null,
  hide_settings: false,
  custom_headers: [],
  public_url: null,
  allow_by_id: true,
  page_title: null,
  page_note: null,
  leave_out_offline_servers: true,
  offline_minutes: 10,
  placeholder_disabled: "disabled",
  placeholder_expired: "expired on {date}",
  placeholder_limited: "data limit reached",
  placeholder_limited_until: "data limit reached, resets on {date}",
  default_device_limit: 0,
  require_hwid: false,
  placeholder_device_limit: "device limit reached: remove a device to add this one",
  placeholder_hwid_required: "this app does not send a device id (HWID)",
};

/** The placeholders each text may hold: a date only where there is one. */
const PLACEHOLDER_FIELDS = {
  placeholder_disabled: [],
  placeholder_expired: ["{date}"],
  placeholder_limited: [],
  placeholder_limited_until: ["{date}"],
  placeholder_device_limit: [],
  placeholder_hwid_required: [],
} as const satisfies Record<string, readonly string[]>;

/** The variables an operator's header value may hold. */
export const HEADER_VARIABLES = [
  "{USERNAME}",
  "{DATA_LEFT}",
  "{DAYS_LEFT}",
  "{EXPIRE_DATE}",
  "{STATUS}",
  "{SUBSCRIPTION_URL}",
];

/** Headers /sub answers carry by themselves (or HTTP owns): an operator's header may not be one. */
const RESERVED_HEADERS = new Set([
  "content-type",
  "content-length",
  "content-disposition",
  "content-encoding",
  "content-security-policy",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "date",
  "etag",
  "cache-control",
  "vary",
  "location",
  "set-cookie",
  "x-content-type-options",
  "referrer-policy",
  "x-request-id",
  "subscription-userinfo",
  "profile-title",
  "profile-update-interval",
  "profile-web-page-url",
  "support-url",
  "announce",
  "announce-url",
  "routing",
  "hide-settings",
]);

const validateSingbox = new Ajv({ strict: false, allErrors: true }).compile(SINGBOX_SCHEMA);
const MIHOMO_BUILT_INS = new Set(["DIRECT", "REJECT", "REJECT-DROP", "PASS", "COMPATIBLE", "{{all}}"]);

export class SubscriptionSettingsService {
  constructor(
    private readonly settings: SubscriptionSettingsRepository,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async get(): Promise<SubscriptionSettings> {
    const stored = (await this.settings.read()) ?? {};
    return { ...DEFAULT_SETTINGS, ...stored } as SubscriptionSettings;
  }

  /** What the devices feature judges fetches by: the default device limit and whether an HWID is required. */
  async devicePolicy(): Promise<{ defaultLimit: number; requireHwid: boolean }> {
    const settings = await this.get();
    return { defaultLimit: settings.default_device_limit, requireHwid: settings.require_hwid };
  }

  async update(patch: SubscriptionSettingsUpdate): Promise<SubscriptionSettings> {
    const problems = settingsProblems(patch);
    if (problems.length > 0) {
      throw new UnprocessableError(
        `the settings are not valid: ${problems.map((p) => `${p.path} ${p.message}`).join("; ")}`,
        problems,
        "subscription_settings_invalid",
      );
    }
    const next = { ...(await this.get()), ...patch };
    await this.settings.write(next, this.now().toISOString());
    return next;
  }
}

/** All User-Agent rules together, in matcher steps (the defaults are about 320). */
export const MAX_RULES_PROGRAM = 10_000;

/** Everything wrong with the given fields, each with its path in the request body. */
export function settingsProblems(patch: SubscriptionSettingsUpdate): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  if (patch.ua_rules !== undefined) problems.push(...uaRuleProblems(patch.ua_rules));
  if (patch.mihomo_base !== undefined) problems.push(...mihomoProblems(patch.mihomo_base));
  if (patch.singbox_base !== undefined)
    problems.push(...singboxProblems(patch.singbox_base as { [key: string]: Json }));
  for (const [key, allowed] of Object.entries(PLACEHOLDER_FIELDS)) {
    const text = patch[key as keyof typeof PLACEHOLDER_FIELDS];
    if (text === undefined) continue;
    for (const found of text.match(/\{[^{}]*\}/g) ?? []) {
      if (!(allowed as readonly string[]).includes(found)) {
        const known = allowed.length === 0 ? "none is known here" : `known: ${allowed.join(", ")}`;
        problems.push({ path: `body.${key}`, message: `unknown placeholder ${found} (${known})` });
      }
    }
  }
  patch.custom_headers?.forEach((header, i) => {
    if (RESERVED_HEADERS.has(header.name.toLowerCase())) {
      problems.push({ path: `body.custom_headers.${i}.name`, message: "a header Portcullis sends itself" });
    }
    for (const found of header.value.match(/\{[^{}]*\}/g) ?? []) {
      if (!HEADER_VARIABLES.includes(found)) {
        problems.push({
          path: `body.custom_headers.${i}.value`,
          message: `unknown variable ${found} (known: ${HEADER_VARIABLES.join(", ")})`,
        });
      }
    }
  });
  const names = (patch.custom_headers ?? []).map((header) => header.name.toLowerCase());
  names.forEach((name, i) => {
    if (names.indexOf(name) !== i)
      problems.push({ path: `body.custom_headers.${i}.name`, message: "named twice" });
  });
  if (patch.routing != null && !/^happ:\/\/routing\/[\x21-\x7e]+$/.test(patch.routing)) {
    problems.push({ path: "body.routing", message: "must be a happ://routing/… link (printable ASCII)" });
  }
  for (const key of ["support_url", "public_url", "profile_web_page_url", "announce_url"] as const) {
    const value = patch[key];
    if (value != null && !/^https?:\/\/[^\s]+$/i.test(value)) {
      problems.push({ path: `body.${key}`, message: "must be an http(s) URL" });
    }
  }
  return problems;
}

function mihomoProblems(text: string): ErrorDetail[] {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (error) {
    return [{ path: "body.mihomo_base", message: `not YAML: ${(error as Error).message.split("\n")[0]}` }];
  }
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) {
    return [{ path: "body.mihomo_base", message: "must be a YAML mapping" }];
  }
  const problems: ErrorDetail[] = [];
  const base = doc as { [key: string]: YamlValue };
  const proxies = base.proxies ?? [];
  if (!Array.isArray(proxies)) problems.push({ path: "body.mihomo_base.proxies", message: "must be a list" });
  const names = new Set(
    (Array.isArray(proxies) ? proxies : []).map((p) =>
      p !== null && typeof p === "object" && !Array.isArray(p) ? p.name : undefined,
    ),
  );
  const groups = base["proxy-groups"] ?? [];
  if (!Array.isArray(groups))
    return [...problems, { path: "body.mihomo_base.proxy-groups", message: "must be a list" }];
  for (const group of groups) {
    if (group !== null && typeof group === "object" && !Array.isArray(group)) names.add(group.name);
  }
  groups.forEach((group, i) => {
    const at = `body.mihomo_base.proxy-groups.${i}`;
    if (group === null || typeof group !== "object" || Array.isArray(group)) {
      problems.push({ path: at, message: "must be a mapping" });
      return;
    }
    if (typeof group.name !== "string" || group.name === "")
      problems.push({ path: `${at}.name`, message: "is required" });
    if (!["select", "url-test", "fallback", "load-balance", "relay"].includes(String(group.type))) {
      problems.push({
        path: `${at}.type`,
        message: "must be select, url-test, fallback, load-balance or relay",
      });
    }
    if (!Array.isArray(group.proxies) && group.use === undefined) {
      problems.push({ path: `${at}.proxies`, message: "is required (a list) when the group has no `use`" });
    }
    if (Array.isArray(group.proxies)) {
      group.proxies.forEach((name, j) => {
        if (typeof name !== "string" || (!MIHOMO_BUILT_INS.has(name) && !names.has(name))) {
          problems.push({
            path: `${at}.proxies.${j}`,
            message: `names no proxy or group: ${JSON.stringify(name)}`,
          });
        }
      });
    }
  });
  const rules = base.rules;
  if (rules !== undefined && (!Array.isArray(rules) || rules.some((rule) => typeof rule !== "string"))) {
    problems.push({ path: "body.mihomo_base.rules", message: "must be a list of rule strings" });
  }
  if (rules === undefined)
    problems.push({ path: "body.mihomo_base.rules", message: "is required (clients fail without it)" });
  return problems;
}

function singboxProblems(doc: { [key: string]: Json }): ErrorDetail[] {
  // The placeholder stands for at least one outbound: validate with one in its place.
  const sample = JSON.parse(JSON.stringify(doc).replaceAll('"{{all}}"', '"direct"')) as {
    [key: string]: Json;
  };
  const problems: ErrorDetail[] = [];
  if (!validateSingbox(sample)) {
    for (const error of validateSingbox.errors ?? []) {
      if (error.keyword === "if") continue;
      const path = `body.singbox_base${error.instancePath.replaceAll("/", ".")}`;
      problems.push({ path, message: error.message ?? "is not valid" });
    }
  }
  for (const dangling of singboxDanglingTags(doc)) {
    problems.push({
      path: `body.singbox_base${dangling.path.replaceAll("/", ".")}`,
      message: `names no outbound: ${JSON.stringify(dangling.tag)}`,
    });
  }
  return problems;
}

/** Every rule must compile to a linear-time matcher (lib/ua-pattern.ts), and all of them together
 * stay under MAX_RULES_PROGRAM steps, so one User-Agent costs at most that × UA_MATCH_CHARS. */
function uaRuleProblems(rules: readonly { pattern: string }[]): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  let total = 0;
  rules.forEach((rule, i) => {
    try {
      total += UaPattern.compile(rule.pattern).size;
    } catch (error) {
      if (!(error instanceof PatternError)) throw error;
      problems.push({ path: `body.ua_rules.${i}.pattern`, message: error.message });
    }
  });
  if (total > MAX_RULES_PROGRAM) {
    problems.push({
      path: "body.ua_rules",
      message: `the rules are too large together (${total} steps; at most ${MAX_RULES_PROGRAM})`,
    });
  }
  return problems;
}
