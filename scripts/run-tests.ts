// `npm test`: runs every *.test.ts under src/ and test/ with node:test (through tsx, so Node 20 works).
// Extra arguments are file filters: `npm test -- users` runs only files whose path contains "users".
// `--inner` (`npm run test:fast`) runs the inner ring: no file that calls requires() (those run real
// binaries: test/support/requires.ts) and SQLite only, so it needs nothing but Node.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name.startsWith(".")) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...findTests(path));
    else if (name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

const root = process.cwd();
const isInner = process.argv.includes("--inner");
const filters = process.argv.slice(2).filter((arg) => arg !== "--inner");
const needsBinaries = (file: string) => /\brequires\(/.test(readFileSync(file, "utf8"));
const files = ["src", "test"]
  .flatMap((dir) => findTests(join(root, dir)))
  .map((file) => relative(root, file))
  .filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)))
  .filter((file) => !isInner || !needsBinaries(file))
  .sort();

if (files.length === 0) {
  console.error(`no test files match ${filters.join(", ")}`);
  process.exit(1);
}

// Every test app logs here (test/support/app.ts); after the run the logs are searched for secrets.
const logDir = mkdtempSync(join(tmpdir(), "portcullis-test-logs-"));
const concurrency = process.env.TEST_CONCURRENCY ?? "2";
const result = spawnSync(
  process.execPath,
  ["--import", "tsx", "--test", `--test-concurrency=${concurrency}`, "--test-reporter=spec", ...files],
  {
    stdio: "inherit",
    env: {
      ...process.env,
      NODE_ENV: "test",
      PORTCULLIS_TEST_LOG_DIR: logDir,
      ...(isInner ? { DATABASE_URL: undefined } : {}),
    },
  },
);

/** What must never appear in a log line: key material, bearer secrets, the test admin password and
 * any value a test marks with "leakcheck" (e.g. a server's api_credentials token). */
const SECRET_PATTERNS = [/PRIVATE KEY/, /pc[sk]_[A-Za-z0-9_-]{43}/, /correct horse battery/, /leakcheck/i];

function scanLogs(): string[] {
  const leaks: string[] = [];
  let lines = 0;
  for (const name of readdirSync(logDir)) {
    for (const line of readFileSync(join(logDir, name), "utf8").split("\n")) {
      lines++;
      const hit = SECRET_PATTERNS.find((re) => re.test(line));
      if (hit) leaks.push(`${name}: ${hit} in ${line.slice(0, 200)}`);
    }
  }
  console.log(
    `log secret scan: ${lines} log lines from ${readdirSync(logDir).length} files, ${leaks.length} leaks`,
  );
  return leaks;
}

const leaks = scanLogs();
for (const leak of leaks) console.error(`SECRET LEAKED TO LOGS: ${leak}`);
process.exit(leaks.length > 0 ? 1 : (result.status ?? 1));
