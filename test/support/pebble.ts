// Debian's pebble (a real ACME CA, EAB required) with pebble-challtestsrv as its DNS on free loopback
// ports, for issuance tests with real http-01 and dns-01 validation. See shared/reference/acme-pebble.md.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { waitFor } from "./poll.ts";
import { freePorts } from "./ports.ts";

const run = promisify(execFile);

export const PEBBLE_EAB = {
  kid: "kid-1",
  hmacKey: "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W",
} as const;
/** A well-formed HMAC key pebble does not know for kid-1. */
export const WRONG_EAB_HMAC_KEY = "b10lLJs8l1GPIzsLP0s6pMt8O0XVGnfTaCeROxQM0BIt2XrJMDHJZBM5NuQmQJQH";

export type PebbleOptions = {
  /** Port pebble's VA fetches http-01 tokens from (the test's own listener on 127.0.0.1). */
  httpPort: number;
};

export type Pebble = {
  directoryUrl: string;
  /** CA of pebble's own HTTPS listener (made for this run): trust it to talk ACME to pebble. */
  listenerCaPem: string;
  /** The same CA as a file (for PORTCULLIS_ACME_CA_FILE); removed by stop(). */
  listenerCaFile: string;
  /** challtestsrv's management API (set-txt / clear-txt), for dns-01 hooks. */
  challtestsrvUrl: string;
  /** pebble's issuing root; regenerated on every start, so fetched from the running pebble. */
  rootPem(): Promise<string>;
  stop(): Promise<void>;
};

type Child = { process: ChildProcess; output: string[]; spawnError?: Error };

async function makeListenerCertificate(dir: string): Promise<void> {
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await run(
    "openssl",
    ["req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2"].concat([
      "-subj",
      "/CN=portcullis test pebble listener CA",
    ]),
    { cwd: dir },
  );
  await run("openssl", ["req", ...ec, "-keyout", "key.pem", "-out", "srv.csr", "-subj", "/CN=localhost"], {
    cwd: dir,
  });
  const extensions =
    "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n";
  await writeFile(join(dir, "ext.cnf"), extensions);
  const sign = ["x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial"];
  await run("openssl", [...sign, "-out", "cert.pem", "-days", "2", "-extfile", "ext.cnf"], { cwd: dir });
}

function startChild(command: string, args: string[], env: Record<string, string> = {}): Child {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const output: string[] = [];
  const started: Child = { process: child, output };
  child.once("error", (error) => {
    started.spawnError = error;
  });
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 200) output.shift();
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  return started;
}

async function stopChild(child: Child): Promise<void> {
  const { process: proc } = child;
  if (child.spawnError !== undefined || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  proc.kill("SIGTERM");
  const killTimer = setTimeout(() => proc.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(killTimer);
}

/** GET over HTTPS trusting only `caPem`; resolves with status and body. */
export function httpsGet(url: string, caPem: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca: caPem, timeout: 5_000 }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () =>
        resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
      );
    });
    req.on("timeout", () => req.destroy(new Error(`timed out: ${url}`)));
    req.on("error", reject);
    req.end();
  });
}

function ensureRunning(children: Child[]): void {
  for (const child of children) {
    if (child.spawnError !== undefined) throw child.spawnError;
    if (child.process.exitCode !== null) {
      throw new Error(
        `${child.process.spawnfile} exited (${child.process.exitCode}): ${child.output.join("")}`,
      );
    }
  }
}

export async function startPebble(options: PebbleOptions): Promise<Pebble> {
  const dir = await mkdtemp(join(tmpdir(), "portcullis-pebble-"));
  await makeListenerCertificate(dir);
  const [acmePort, managementPort, dnsPort, challManagementPort, tlsPort] = await freePorts(5);
  const config = {
    pebble: {
      listenAddress: `127.0.0.1:${acmePort}`,
      managementListenAddress: `127.0.0.1:${managementPort}`,
      certificate: join(dir, "cert.pem"),
      privateKey: join(dir, "key.pem"),
      httpPort: options.httpPort,
      tlsPort,
      ocspResponderURL: "",
      externalAccountBindingRequired: true,
      externalAccountMACKeys: { [PEBBLE_EAB.kid]: PEBBLE_EAB.hmacKey },
    },
  };
  await writeFile(join(dir, "pebble-config.json"), JSON.stringify(config));
  const challtestsrv = startChild("pebble-challtestsrv", [
    ...["-dns01", `127.0.0.1:${dnsPort}`, "-http01", "", "-https01", "", "-tlsalpn01", ""],
    ...["-management", `127.0.0.1:${challManagementPort}`, "-defaultIPv4", "127.0.0.1", "-defaultIPv6", ""],
  ]);
  // NOSLEEP: validate at once; AUTHZREUSE=0: every order is really validated (nonce rejection stays at 5%).
  const pebble = startChild(
    "pebble",
    ["-config", join(dir, "pebble-config.json"), "-dnsserver", `127.0.0.1:${dnsPort}`],
    { PEBBLE_VA_NOSLEEP: "1", PEBBLE_AUTHZREUSE: "0" },
  );
  const children = [challtestsrv, pebble];
  const stop = once(async () => {
    process.off("exit", killNow);
    await Promise.all(children.map(stopChild));
    await rm(dir, { recursive: true, force: true });
  });
  const killNow = () => {
    for (const child of children) child.process.kill("SIGKILL");
  };
  process.once("exit", killNow);
  const listenerCaPem = await readFile(join(dir, "ca.pem"), "utf8");
  const directoryUrl = `https://127.0.0.1:${acmePort}/dir`;
  try {
    await waitFor(
      async () => {
        ensureRunning(children);
        return (await httpsGet(directoryUrl, listenerCaPem)).status === 200;
      },
      { timeoutMs: 15_000, what: "pebble's directory" },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  const rootPem = async () => {
    const { status, body } = await httpsGet(`https://127.0.0.1:${managementPort}/roots/0`, listenerCaPem);
    if (status !== 200) throw new Error(`pebble /roots/0 answered ${status}`);
    return body;
  };
  return {
    directoryUrl,
    listenerCaPem,
    listenerCaFile: join(dir, "ca.pem"),
    challtestsrvUrl: `http://127.0.0.1:${challManagementPort}`,
    rootPem,
    stop,
  };
}

function once(action: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => {
    running ??= action();
    return running;
  };
}
