// The service version, read once from package.json (the /health record and the OpenAPI info carry it).
import { readFileSync } from "node:fs";

const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  version: string;
};
export const packageVersion: string = pkg.version;
