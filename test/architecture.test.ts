// The dependency rules of docs/ARCHITECTURE.md as a test, so they stay true as the code grows: every
// import in src/ (type-only and dynamic ones too) is read as text and checked. Tests are exempt (they
// may reach anything); a new edge between features is a reviewed one-line change to FEATURE_EDGES.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, test } from "node:test";

const ROOT = resolve(import.meta.dirname, "..");
const SRC = join(ROOT, "src");

/**
 * Which feature may import which, read top-down: subscriptions → access → inbounds → sync →
 * templates → certificates / servers / users. A missing edge fails the test, and so does a listed
 * edge nobody uses any more, so this list is always the real graph.
 */
const FEATURE_EDGES: readonly string[] = [
  "admins -> auth",
  "access -> inbounds",
  "access -> servers",
  "access -> sync",
  "access -> users",
  "inbounds -> servers",
  "inbounds -> sync",
  "inbounds -> templates",
  "nodes -> servers",
  "subscriptions -> access",
  "subscriptions -> inbounds",
  "subscriptions -> subscription-settings",
  "sync -> certificates",
  "sync -> servers",
  "sync -> templates",
  "templates -> certificates",
  "traffic -> servers",
  "traffic -> sync",
  "traffic -> users",
];

/** Top to bottom: a feature may import only features below it, so the graph has no cycles. */
const FEATURE_ORDER = [
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
  "admins",
  "auth",
  "audit",
  "metrics",
  "notifications",
  "subscription-settings",
  "health",
];

/** Lower layers: they know nothing of features or of how the application is put together. */
const FOUNDATIONS = ["lib", "db", "config", "protocols", "links", "cores"];
const UPPER = ["features", "app.ts", "deps.ts", "jobs", "cli"];
/** What puts the application together: features are called from here, never the other way. */
const WIRING = ["app.ts", "deps.ts", "jobs", "cli", "main.ts"];

type Import = { from: string; to: string; line: number };

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
      found.push({ specifier, line: text.slice(0, offset).split("\n").length });
    }
  }
  return found;
}

/** `src/`-relative path of a relative specifier, or the package name of a bare one. */
function target(fromFile: string, specifier: string): string {
  if (!specifier.startsWith(".")) return specifier;
  return relative(SRC, resolve(dirname(join(SRC, fromFile)), specifier))
    .split("\\")
    .join("/");
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (entry.name.endsWith(".ts")) out.push(relative(SRC, path).split("\\").join("/"));
  }
  return out.sort();
}

const isTest = (file: string) => file.endsWith(".test.ts") || file.endsWith(".fixture.ts");
const isGenerated = (file: string) => file.startsWith("gen/");
const layerOf = (file: string) => (file.includes("/") ? file.slice(0, file.indexOf("/")) : file);
const featureOf = (file: string) => (file.startsWith("features/") ? file.split("/")[1] : undefined);

type Graph = { files: string[]; imports: Import[]; texts: Map<string, string> };

function readGraph(): Graph {
  const files = sourceFiles(SRC).filter((file) => !isTest(file) && !isGenerated(file));
  const texts = new Map(files.map((file) => [file, readFileSync(join(SRC, file), "utf8")]));
  const imports = files.flatMap((file) =>
    importsOf(texts.get(file) ?? "").map(({ specifier, line }) => ({
      from: file,
      to: target(file, specifier),
      line,
    })),
  );
  return { files, imports, texts };
}

const show = (edge: Import) => `src/${edge.from}:${edge.line} imports ${edge.to}`;

/** The rule checks, each returning what breaks it (empty when kept). */
const RULES: Record<string, (graph: Graph) => string[]> = {
  "Kysely only in *.repository.ts and src/db/": ({ imports }) =>
    imports
      .filter((i) => i.to === "kysely" && !i.from.endsWith(".repository.ts") && !i.from.startsWith("db/"))
      .map(show),

  "protobuf, gRPC and src/gen/ only in src/cores/ and src/lobby/": ({ imports }) =>
    imports
      .filter((i) => /^@bufbuild\/protobuf|^@grpc\/grpc-js|^gen\//.test(i.to))
      .filter((i) => !["cores", "lobby"].includes(layerOf(i.from)))
      .map(show),

  "lib, db, config, protocols, links, cores import nothing from features, app, deps, jobs, cli": ({
    imports,
  }) =>
    imports.filter((i) => FOUNDATIONS.includes(layerOf(i.from)) && UPPER.includes(layerOf(i.to))).map(show),

  // A package may be wrapped (features/certificates/peculiar-x509.ts loads a polyfill first); our own
  // modules are imported from where they live, so each thing has one path.
  "no barrel files: no module of ours is re-exported": ({ files, texts }) =>
    files.flatMap((file) =>
      [
        ...(texts.get(file) ?? "").matchAll(/^\s*export\s+(?:type\s+)?(?:\*|\{[^}]*\})\s*from\s*["']\./gm),
      ].map(() => `src/${file} re-exports a module of ours`),
    ),

  "process.env is read only in src/config/": ({ files, texts }) =>
    files
      .filter((file) => !file.startsWith("config/") && /\bprocess\.env\b/.test(texts.get(file) ?? ""))
      .map((file) => `src/${file} reads process.env`),

  // The node agent (src/node/) runs on proxy hosts: it shares the core client's parts, never the
  // panel's features or wiring, and only the command line starts it.
  "node imports only lib, config, protocols and cores; only cli imports node": ({ imports }) => [
    ...imports
      .filter((i) => layerOf(i.from) === "node" && i.to.includes("/") && !i.to.startsWith("node:"))
      .filter((i) => !["node", "lib", "config", "protocols", "cores"].includes(layerOf(i.to)))
      .filter((i) => !i.to.startsWith("@"))
      .map(show),
    ...imports
      .filter((i) => layerOf(i.to) === "node" && !["node", "cli"].includes(layerOf(i.from)))
      .map(show),
  ],

  "features import nothing from app, deps, jobs, cli or main": ({ imports }) =>
    imports.filter((i) => layerOf(i.from) === "features" && WIRING.includes(layerOf(i.to))).map(show),

  "no import cycles between files": ({ files, imports }) => cyclesOf(files, imports),

  "features read top-down: every allowed edge points down FEATURE_ORDER": () => edgesAgainstOrder(),

  "feature -> feature imports are the ones FEATURE_EDGES allows": ({ imports }) => {
    const used = featureEdges(imports);
    const problems = [...used.entries()]
      .filter(([edge]) => !FEATURE_EDGES.includes(edge))
      .map(([edge, where]) => `${edge} is not in FEATURE_EDGES (${show(where)})`);
    for (const edge of FEATURE_EDGES) {
      if (!used.has(edge)) problems.push(`${edge} is in FEATURE_EDGES but nothing imports that way`);
    }
    return problems;
  },
};

/** FEATURE_EDGES itself: every edge points down FEATURE_ORDER (no cycle can be allowed). */
function edgesAgainstOrder(): string[] {
  return FEATURE_EDGES.filter((edge) => {
    const [from = "", to = ""] = edge.split(" -> ");
    const [a, b] = [FEATURE_ORDER.indexOf(from), FEATURE_ORDER.indexOf(to)];
    return a === -1 || b === -1 || a >= b;
  }).map((edge) => `${edge} does not point down FEATURE_ORDER`);
}

function featureEdges(imports: readonly Import[]): Map<string, Import> {
  const edges = new Map<string, Import>();
  for (const i of imports) {
    const [from, to] = [featureOf(i.from), featureOf(i.to)];
    if (from !== undefined && to !== undefined && from !== to && !edges.has(`${from} -> ${to}`)) {
      edges.set(`${from} -> ${to}`, i);
    }
  }
  return edges;
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

describe("architecture", () => {
  const graph = readGraph();

  test("the scanner sees the whole tree (a broken pattern would make every rule pass)", () => {
    assert.ok(graph.files.length > 100, `only ${graph.files.length} files read`);
    assert.ok(graph.imports.some((i) => i.to === "kysely" && i.from.startsWith("db/")));
    assert.ok(
      graph.imports.some((i) => i.from === "cli/commands.ts" && i.to === "cli/serve.ts"),
      "dynamic import",
    );
  });

  for (const [rule, check] of Object.entries(RULES)) {
    test(rule, () => {
      const broken = check(graph);
      assert.deepEqual(broken, [], `${broken.length} violation(s):\n${broken.join("\n")}`);
    });
  }
});
