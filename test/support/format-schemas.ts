// The validators the format tests check documents with: mihomo's (the meta-json-schema package) and
// sing-box 1.12's (src/links/formats/singbox-schema.ts), compiled once.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Ajv } from "ajv";
import { SINGBOX_SCHEMA } from "../../src/links/formats/singbox-schema.ts";

const require = createRequire(import.meta.url);
const ajv = new Ajv({ strict: false, allErrors: true });

export const validateMihomo = ajv.compile(
  JSON.parse(
    readFileSync(require.resolve("meta-json-schema/schemas/meta-json-schema.json"), "utf8"),
  ) as object,
);
export const validateSingbox = ajv.compile(SINGBOX_SCHEMA);
