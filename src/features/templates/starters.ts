// The starter templates shipped in ./starters (one JSON file each, documented in docs/TEMPLATES.md)
// and their idempotent installation: a starter whose name is taken is skipped, never overwritten.
import { Type } from "typebox";
import { Value } from "typebox/value";
import type { CoreFlavor } from "../../cores/core-types.ts";
import { ConflictError } from "../../lib/errors.ts";
// Imported, not read from disk, so the bundle `npm start` runs (scripts/build.mjs) carries them too.
import shadowsocks2022 from "./starters/shadowsocks-2022.json" with { type: "json" };
import shadowsocksAead from "./starters/shadowsocks-aead.json" with { type: "json" };
import trojanTcpTls from "./starters/trojan-tcp-tls.json" with { type: "json" };
import vlessRealityVision from "./starters/vless-reality-vision.json" with { type: "json" };
import vlessWsTls from "./starters/vless-ws-tls.json" with { type: "json" };
import vlessXhttpReality from "./starters/vless-xhttp-reality.json" with { type: "json" };
import vmessWsTls from "./starters/vmess-ws-tls.json" with { type: "json" };
import { TemplateCreate } from "./templates.schemas.ts";
import type { TemplatesService } from "./templates.service.ts";

export const STARTER_NAMES = [
  "vless-reality-vision",
  "vless-xhttp-reality",
  "vless-ws-tls",
  "vmess-ws-tls",
  "trojan-tcp-tls",
  "shadowsocks-aead",
  "shadowsocks-2022",
] as const;

const FILES: Record<(typeof STARTER_NAMES)[number], unknown> = {
  "vless-reality-vision": vlessRealityVision,
  "vless-xhttp-reality": vlessXhttpReality,
  "vless-ws-tls": vlessWsTls,
  "vmess-ws-tls": vmessWsTls,
  "trojan-tcp-tls": trojanTcpTls,
  "shadowsocks-aead": shadowsocksAead,
  "shadowsocks-2022": shadowsocks2022,
};

export type Starter = { template: TemplateCreate; claimedCores: CoreFlavor[] };

const Claim = Type.Object({
  supported_cores: Type.Array(Type.Union([Type.Literal("xray"), Type.Literal("v2ray")]), { minItems: 1 }),
});

export function loadStarters(): Starter[] {
  return STARTER_NAMES.map((name) => {
    // A copy: the imported module object is shared.
    const { supported_cores, ...template } = structuredClone(FILES[name]) as Record<string, unknown>;
    const claim = { supported_cores };
    if (!Value.Check(TemplateCreate, template) || !Value.Check(Claim, claim) || template.name !== name) {
      throw new Error(`starter ${name}.json does not have the shape of a template with supported_cores`);
    }
    return { template, claimedCores: claim.supported_cores };
  });
}

export type InstallOutcome =
  | { name: string; status: "installed"; supportedCores: CoreFlavor[] }
  | { name: string; status: "skipped"; reason: string };

/** Creates every starter whose name is free; returns one outcome per starter, in order. */
export async function installStarters(
  templates: TemplatesService,
  starters: Starter[] = loadStarters(),
): Promise<InstallOutcome[]> {
  const outcomes: InstallOutcome[] = [];
  for (const { template } of starters) {
    if (await templates.findByName(template.name)) {
      outcomes.push({ name: template.name, status: "skipped", reason: "a template with this name exists" });
      continue;
    }
    try {
      const created = await templates.create(template);
      outcomes.push({ name: created.name, status: "installed", supportedCores: created.supported_cores });
    } catch (error) {
      // Another install (a second click, another instance) took the name between the look and the write.
      if (!(error instanceof ConflictError && error.code === "template_name_taken")) throw error;
      outcomes.push({ name: template.name, status: "skipped", reason: "a template with this name exists" });
    }
  }
  return outcomes;
}
