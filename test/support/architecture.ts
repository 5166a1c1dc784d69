// The dependency rules of docs/ARCHITECTURE.md as a function over a tree, so the same checks run on
// the project (test/architecture.test.ts) and on test/fixtures/architecture/, a tree of planted
// violations that proves each rule can fail. Every import of src/ and web/src/ (type-only, dynamic and
// `export … from` ones too) is read as text; tests are exempt (they may reach anything).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

export type Policy = {
  /** Which feature may import which ("from -> to"); a used edge not listed and a listed one unused fail. */
  featureEdges: readonly string[];
  /** Features top to bottom: every allowed edge points down, so the feature graph has no cycles. */
  featureOrder: readonly string[];
  /**
   * The top-level parts of src/ in tiers, top to bottom: a part imports only parts of lower tiers;
   * parts of one tier never import each other. A part in no tier is a violation (place it first).
   */
  layerTiers: readonly (readonly string[])[];
  /** The dynamic loads allowed, as `<src-relative file>: <kind>`, each with the reason. */
  dynamicLoads: Readonly<Record<string, string>>;
  /**
   * Parts of a feature that stand on their own: the files under `dir` import only from `dir` and the
   * `mayImport` folders of ours, and only the `packages` listed (a prefix: "node:" is every builtin).
   */
  enclosed: readonly { dir: string; mayImport: readonly string[]; packages: readonly string[] }[];
};

export const POLICY: Policy = {
  featureEdges: [
    "admins -> auth",
    "groups -> access",
    "groups -> inbounds",
    "groups -> users",
    "import -> inbounds",
    "import -> servers",
    "import -> subscriptions",
    "import -> sync",
    "import -> templates",
    "access -> inbounds",
    "access -> servers",
    "access -> sync",
    "access -> users",
    "devices -> notifications",
    "fairuse -> audit",
    "fairuse -> notifications",
    "inbounds -> servers",
    "inbounds -> sync",
    "inbounds -> templates",
    "nodes -> servers",
    "plans -> audit",
    "plans -> users",
    "overview -> nodes",
    "subscriptions -> access",
    "subscriptions -> devices",
    "subscriptions -> inbounds",
    "subscriptions -> subscription-settings",
    "sync -> certificates",
    "sync -> servers",
    "sync -> templates",
    "templates -> certificates",
    "traffic -> servers",
    "traffic -> sync",
    "traffic -> users",
  ],
  featureOrder: [
    "plans",
    "overview",
    "groups",
    "import",
    "subscriptions",
    "traffic",
    "access",
    "inbounds",
    "sync",
    "templates",
    "certificates",
    "nodes",
    "servers",
    "users",
    "fairuse",
    "devices",
    "admins",
    "auth",
    "audit",
    "metrics",
    "notifications",
    "subscription-settings",
    "health",
  ],
  layerTiers: [
    // The panel's entry, and the node agent's (its own bundle: `portcullis node` loads only the agent).
    ["main.ts", "node-main.ts"],
    ["cli"],
    ["app.ts"],
    ["deps.ts"],
    // The change → reactions table (src/reactions/) reaches the features it wires, as the jobs do.
    ["jobs", "reactions"],
    // The node agent (src/node/, `portcullis node`) runs on proxy hosts: it shares the foundations
    // (the core client's parts) with the panel's features and knows nothing of them.
    ["features", "node"],
    // The foundations: each knows nothing of the others in its tier (cores never reads the database,
    // links never call a core, config is plain values).
    ["db", "config", "cores", "links", "lobby"],
    ["protocols"],
    ["lib"],
    // Leaves: the shared value sets and the generated protobuf code import nothing of ours.
    ["domain", "gen"],
  ],
  dynamicLoads: {
    "db/connection.ts: createRequire":
      "loads the SQLite driver picked by the running Node (better-sqlite3 12 or 13), by name",
    "db/checkpointer.ts: require":
      "the checkpoint worker's CommonJS source (eval worker) loads node:worker_threads and that driver",
    "features/import/source.repository.ts: import()":
      "the MySQL driver (mysql2), loaded only when `import --db mysql://` is given, so nothing else needs it",
  },
  enclosed: [
    // The subscription engine (records, layouts, change feed, fetch log, sweep): no feature, no HTTP,
    // no format; the feature hands it what it needs (engine/engine.ts).
    {
      dir: "src/features/subscriptions/engine/",
      mayImport: ["src/lib/", "src/domain/"],
      packages: ["node:", "pino"],
    },
  ],
};

/** `to`: a root-relative path when `local` (a relative specifier), else the package name. */
type Import = { from: string; to: string; local: boolean; line: number };
type Tree = { root: string; files: string[]; imports: Import[]; texts: Map<string, string> };
export type Violations = Record<string, string[]>;

/** Every import of a source file: static, `export … from`, side-effect and dynamic `import()`. */
function importsOf(text: string): { specifier: string; line: number }[] {
  const found: { specifier: string; line: number }[] = [];
  const patterns = [
    /^\s*(?:import|export)\s[^;]*?\sfrom\s*["']([^"']+)["']/gms,
    /^\s*import\s*["']([^"']+)["']/gm,
    /\bimport\(\s*["']([^"']+)["']\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) {
      const specifier = match[1] ?? "";
      const offset = (match.index ?? 0) + match[0].lastIndexOf(specifier);
      found.push({ specifier, line: lineAt(text, offset) });
    }
  }
  return found;
}

const lineAt = (text: string, offset: number) => text.slice(0, offset).split("\n").length;

/**
 * Loads the import scan cannot follow: `import()` of anything but a plain string literal (a template
 * string, a variable), `require(` and `createRequire`. Comments are blanked first (keeping lines).
 */
function dynamicLoadsOf(text: string): { kind: string; line: number }[] {
  const code = text
    .replace(/\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, " "))
    .replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
  const kinds: [string, RegExp][] = [
    ["import()", /\bimport\(\s*(?!["'][^"'`$]*["']\s*\))/g],
    ["require", /\brequire\s*\(/g],
    ["createRequire", /\bcreateRequire\b/g],
  ];
  return kinds.flatMap(([kind, pattern]) =>
    [...code.matchAll(pattern)].map((match) => ({ kind, line: lineAt(code, match.index ?? 0) })),
  );
}

function sourceFiles(base: string, dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(base, path));
    else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts"))
      out.push(slash(relative(base, path)));
  }
  return out.sort();
}

const slash = (path: string) => path.split("\\").join("/");
const isTest = (file: string) => /\.(test|fixture|spec)\.tsx?$/.test(file);
const isGenerated = (file: string) => file.startsWith("src/gen/");
/** The top-level part of src/ a root-relative path is in ("features", "app.ts"), or undefined. */
const layerOf = (path: string) => (path.startsWith("src/") ? path.split("/")[1] : undefined);
const featureOf = (path: string) => (path.startsWith("src/features/") ? path.split("/")[2] : undefined);
const inWebSrc = (path: string) => path.startsWith("web/src/");

/** Reads src/ and web/src/ under `root`; import targets are root-relative paths or package names. */
export function readTree(root: string): Tree {
  const files = [
    ...sourceFiles(root, join(root, "src")),
    ...sourceFiles(root, join(root, "web", "src")),
  ].filter((file) => !isTest(file) && !isGenerated(file));
  const texts = new Map(files.map((file) => [file, readFileSync(join(root, file), "utf8")]));
  const imports = files.flatMap((file) =>
    importsOf(texts.get(file) ?? "").map(({ specifier, line }) => ({
      from: file,
      to: specifier.startsWith(".")
        ? slash(relative(root, resolve(dirname(join(root, file)), specifier)))
        : specifier,
      local: specifier.startsWith("."),
      line,
    })),
  );
  return { root, files, imports, texts };
}

const show = (edge: Import) => `${edge.from}:${edge.line} imports ${edge.to}`;
const fromSrc = (i: Import) => i.from.startsWith("src/");

function tierOf(policy: Policy, layer: string): number {
  return policy.layerTiers.findIndex((tier) => tier.includes(layer));
}

/** The rules, each returning what breaks it (empty when kept). */
export function checkArchitecture(root: string, policy: Policy = POLICY): Violations {
  const tree = readTree(root);
  const { files, imports, texts } = tree;
  const srcImports = imports.filter(fromSrc);
  return {
    "Kysely only in *.repository.ts and src/db/": srcImports
      .filter((i) => i.to === "kysely" && !i.from.endsWith(".repository.ts") && layerOf(i.from) !== "db")
      .map(show),

    "protobuf, gRPC and src/gen/ only in src/cores/ and src/lobby/": srcImports
      .filter((i) => /^@bufbuild\/protobuf|^@grpc\/grpc-js|^src\/gen\//.test(i.to))
      .filter((i) => !["cores", "lobby"].includes(layerOf(i.from) ?? ""))
      .map(show),

    "layers: an import between parts of src/ points down a tier of layerTiers, never sideways": srcImports
      .filter((i) => i.to.startsWith("src/") && layerOf(i.to) !== layerOf(i.from))
      .flatMap((i) => {
        const [from, to] = [tierOf(policy, layerOf(i.from) ?? ""), tierOf(policy, layerOf(i.to) ?? "")];
        if (from === -1 || to === -1) return [`${show(i)}: ${from === -1 ? i.from : i.to} is in no tier`];
        if (from === to) return [`${show(i)}: sideways within a tier`];
        return from > to ? [`${show(i)}: up the tiers`] : [];
      }),

    "src/ imports nothing outside src/ but package.json (not web/, test/, bench/, scripts/)": srcImports
      .filter((i) => i.local && !i.to.startsWith("src/") && i.to !== "package.json")
      .map(show),

    "web/src/ imports nothing outside web/src/ (its API types are generated into web/src/api/schema.d.ts)":
      imports.filter((i) => inWebSrc(i.from) && i.local && !inWebSrc(i.to)).map(show),

    "no dynamic loads (template-string or computed import(), require, createRequire) but those allowed":
      dynamicLoads(tree, policy),

    // A package may be wrapped (features/certificates/peculiar-x509.ts loads a polyfill first); our own
    // modules are imported from where they live, so each thing has one path.
    "no barrel files: no module of ours is re-exported": files
      .filter((file) => !inWebSrc(file))
      .flatMap((file) =>
        [
          ...(texts.get(file) ?? "").matchAll(/^\s*export\s+(?:type\s+)?(?:\*|\{[^}]*\})\s*from\s*["']\./gm),
        ].map(() => `${file} re-exports a module of ours`),
      ),

    "process.env is read only in src/config/": files
      .filter((file) => file.startsWith("src/") && layerOf(file) !== "config")
      .filter((file) => /\bprocess\.env\b/.test(texts.get(file) ?? ""))
      .map((file) => `${file} reads process.env`),

    "no import cycles between files": cyclesOf(files, imports),

    "features read top-down: every allowed edge points down featureOrder": edgesAgainstOrder(policy),

    "feature -> feature imports are the ones featureEdges allows": featureEdgeProblems(srcImports, policy),

    "enclosed parts (the subscription engine) import only themselves, the folders and the packages they list":
      enclosedProblems(srcImports, policy),
  };
}

function enclosedProblems(imports: readonly Import[], policy: Policy): string[] {
  return policy.enclosed.flatMap(({ dir, mayImport, packages }) =>
    imports
      .filter((i) => i.from.startsWith(dir))
      .filter((i) =>
        i.local
          ? !i.to.startsWith(dir) && !mayImport.some((folder) => i.to.startsWith(folder))
          : !packages.some(
              (name) => i.to === name || i.to.startsWith(name.endsWith(":") ? name : `${name}/`),
            ),
      )
      .map((i) => `${show(i)}: outside ${dir}`),
  );
}

function dynamicLoads({ files, texts }: Tree, policy: Policy): string[] {
  const found = files.flatMap((file) =>
    dynamicLoadsOf(texts.get(file) ?? "").map(({ kind, line }) => ({
      key: `${file.replace(/^src\//, "")}: ${kind}`,
      where: `${file}:${line}`,
      kind,
    })),
  );
  const problems = found
    .filter(({ key }) => policy.dynamicLoads[key] === undefined)
    .map(({ where, kind }) => `${where}: ${kind} is not in dynamicLoads`);
  for (const key of Object.keys(policy.dynamicLoads)) {
    if (!found.some((load) => load.key === key)) problems.push(`${key} is in dynamicLoads but not used`);
  }
  return problems;
}

/** featureEdges itself: every edge points down featureOrder (no cycle can be allowed). */
function edgesAgainstOrder(policy: Policy): string[] {
  return policy.featureEdges
    .filter((edge) => {
      const [from = "", to = ""] = edge.split(" -> ");
      const [a, b] = [policy.featureOrder.indexOf(from), policy.featureOrder.indexOf(to)];
      return a === -1 || b === -1 || a >= b;
    })
    .map((edge) => `${edge} does not point down featureOrder`);
}

function featureEdgeProblems(imports: readonly Import[], policy: Policy): string[] {
  const used = new Map<string, Import>();
  for (const i of imports) {
    const [from, to] = [featureOf(i.from), featureOf(i.to)];
    if (from !== undefined && to !== undefined && from !== to && !used.has(`${from} -> ${to}`)) {
      used.set(`${from} -> ${to}`, i);
    }
  }
  const problems = [...used.entries()]
    .filter(([edge]) => !policy.featureEdges.includes(edge))
    .map(([edge, where]) => `${edge} is not in featureEdges (${show(where)})`);
  for (const edge of policy.featureEdges) {
    if (!used.has(edge)) problems.push(`${edge} is in featureEdges but nothing imports that way`);
  }
  return problems;
}

/** Each cycle once, as the files around it. */
function cyclesOf(files: readonly string[], imports: readonly Import[]): string[] {
  const next = new Map<string, string[]>(files.map((file) => [file, []]));
  for (const i of imports) if (next.has(i.to)) next.get(i.from)?.push(i.to);
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const cycles: string[] = [];
  const visit = (file: string): void => {
    state.set(file, "open");
    stack.push(file);
    for (const to of next.get(file) ?? []) {
      if (state.get(to) === "open") cycles.push([...stack.slice(stack.indexOf(to)), to].join(" -> "));
      else if (state.get(to) === undefined) visit(to);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of files) if (state.get(file) === undefined) visit(file);
  return cycles;
}
