// The service version from package.json (the /health record and the OpenAPI info carry it). Imported,
// not read from disk, so the bundle `npm start` runs (scripts/build.mjs) carries it too.
import pkg from "../../package.json" with { type: "json" };

export const packageVersion: string = pkg.version;
