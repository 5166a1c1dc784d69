// ACME issuance (RFC 8555) for publicca certificates: account, order, http-01 or dns-01 validation,
// CSR with a fresh key, download of the chain. Every network call has a deadline; failures become an
// AcmeIssueError whose message is readable and holds no key material.
import { webcrypto } from "node:crypto";
import { Agent } from "node:https";
import { type Authorization, Client, type Order } from "acme-client";
import { AcmeIssueError, type AcmeStep, describeError, hintFor, scrub } from "./acme-errors.ts";
import {
  AcmeCancelledError,
  type AcmeHttpScope,
  describeLostResponse,
  fetchDirectory,
  isLostResponseCrash,
  withAcmeHttpScope,
} from "./acme-http.ts";
import { type DnsHook, dnsChallengeName, runDnsHook } from "./dns01-hook.ts";
import { classifyDomain, type DomainKind, normaliseDomain } from "./domain-name.ts";
import type { Http01Responder } from "./http01-server.ts";
import {
  DEFAULT_KEY_TYPE,
  exportPrivateKeyPem,
  type GeneratedKey,
  generateKey,
  type KeyType,
} from "./keys.ts";
import { Pkcs10CertificateRequestGenerator, SubjectAlternativeNameExtension } from "./peculiar-x509.ts";
import { parseCertificateChain } from "./pem.ts";

export type ExternalAccountBinding = { kid: string; hmacKey: string };
export type AcmeChallenge =
  | { type: "http-01"; responder: Http01Responder }
  | { type: "dns-01"; hook: DnsHook };

export type AcmeIssueOptions = {
  directoryUrl: string;
  /** PEM of the account key; created once by the caller (createAccountKeyPem) and kept encrypted. */
  accountKeyPem: string;
  /** Known account URL: skips the newAccount round trip. */
  accountUrl?: string;
  externalAccountBinding?: ExternalAccountBinding;
  contactEmail?: string;
  domain: string;
  keyType?: KeyType;
  challenge: AcmeChallenge;
  /** Deadline of each network call; default 30 s. */
  requestTimeoutMs?: number;
  /** Deadline of the whole issuance; default 10 min. */
  deadlineMs?: number;
  /** First delay when polling a pending challenge or order (doubles up to 30 s); default 2 s. */
  pollIntervalMs?: number;
  /** Trust only this CA for the ACME server's own TLS certificate (private CAs, test servers). */
  trustedCaPem?: string;
  signal?: AbortSignal;
  /** Problems that do not fail the issuance (a dns-01 clear that failed). Never contains keys. */
  onWarning?: (message: string) => void;
};

export type AcmeIssueResult = { certificatePem: string; privateKeyPem: string; accountUrl: string };

const DEFAULTS = { requestTimeoutMs: 30_000, deadlineMs: 600_000, pollIntervalMs: 2_000 } as const;
const POLL_MAX_MS = 30_000;
const POLL_ATTEMPTS = 10;
const MAX_COMMON_NAME = 64;

/** A new ECDSA P-256 ACME account key (PKCS#8 PEM). */
export async function createAccountKeyPem(): Promise<string> {
  return exportPrivateKeyPem(await generateKey("ecdsa-p256"));
}

type Issuance = {
  options: AcmeIssueOptions;
  domain: string;
  kind: DomainKind;
  /** Per-issuance HTTP settings; acme-client's requests are bound to it (see acme-http.ts). */
  http: AcmeHttpScope;
  secrets: string[];
  cleanups: Array<() => Promise<void>>;
};

export async function issueCertificate(options: AcmeIssueOptions): Promise<AcmeIssueResult> {
  const deadlineMs = options.deadlineMs ?? DEFAULTS.deadlineMs;
  const issuance = prepare(options, deadlineMs);
  try {
    return await withAcmeHttpScope(issuance.http, () =>
      untilAborted(run(issuance), issuance.http.signal, deadlineMs),
    );
  } finally {
    await runCleanups(issuance);
    issuance.http.httpsAgent?.destroy();
  }
}

function prepare(options: AcmeIssueOptions, deadlineMs: number): Issuance {
  const domain = normaliseDomain(options.domain);
  const kind = classifyDomain(domain);
  if (kind === undefined) {
    throw new AcmeIssueError(
      "checking the request",
      "the domain must be a DNS name, a wildcard or an IP address",
    );
  }
  if (kind === "wildcard" && options.challenge.type !== "dns-01") {
    throw new AcmeIssueError("checking the request", "a wildcard name can only be validated with dns-01");
  }
  const deadline = AbortSignal.timeout(deadlineMs);
  const http: AcmeHttpScope = {
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULTS.requestTimeoutMs,
    httpsAgent: options.trustedCaPem === undefined ? undefined : new Agent({ ca: options.trustedCaPem }),
    signal: options.signal === undefined ? deadline : AbortSignal.any([options.signal, deadline]),
  };
  const hmacKey = options.externalAccountBinding?.hmacKey;
  return { options, domain, kind, http, secrets: hmacKey === undefined ? [] : [hmacKey], cleanups: [] };
}

async function run(issuance: Issuance): Promise<AcmeIssueResult> {
  const { options } = issuance;
  const directory = await step(issuance, "reading the ACME directory", () =>
    fetchDirectory(options.directoryUrl, issuance.http),
  );
  if (directory.isExternalAccountRequired && options.externalAccountBinding === undefined) {
    const detail = "the CA requires External Account Binding; configure its key id and HMAC key";
    throw new AcmeIssueError("registering the ACME account", detail);
  }
  const client = createClient(options);
  const accountUrl = await step(issuance, "registering the ACME account", () =>
    ensureAccount(client, options),
  );
  const identifier = { type: issuance.kind === "ip" ? "ip" : "dns", value: issuance.domain };
  const order = await step(issuance, "creating the order", () =>
    client.createOrder({ identifiers: [identifier] }),
  );
  await step(issuance, "validating the domain", () => validateAll(issuance, client, order));
  const key = await generateKey(options.keyType ?? DEFAULT_KEY_TYPE);
  const csr = await createCsrPem(issuance, key);
  const finalized = await step(issuance, "finalizing the order", () => client.finalizeOrder(order, csr));
  const certificatePem = await step(
    issuance,
    "downloading the certificate",
    async () => parseCertificateChain(await client.getCertificate(finalized)).pem,
  );
  return { certificatePem, privateKeyPem: await exportPrivateKeyPem(key), accountUrl };
}

function createClient(options: AcmeIssueOptions): Client {
  const pollIntervalMs = options.pollIntervalMs ?? DEFAULTS.pollIntervalMs;
  return new Client({
    directoryUrl: options.directoryUrl,
    accountKey: options.accountKeyPem,
    accountUrl: options.accountUrl,
    externalAccountBinding: options.externalAccountBinding,
    backoffMin: pollIntervalMs,
    backoffMax: Math.max(pollIntervalMs, POLL_MAX_MS),
    backoffAttempts: POLL_ATTEMPTS,
  });
}

/**
 * The account URL for the key: an existing account is looked up first (`onlyReturnExisting`), because
 * acme-client answers a newAccount 200 with an update carrying our ToS flag, which pebble refuses as an
 * empty update. Any lookup failure falls through to a real registration, whose error is the one reported.
 */
async function ensureAccount(client: Client, options: AcmeIssueOptions): Promise<string> {
  if (options.accountUrl !== undefined) return options.accountUrl;
  try {
    await client.createAccount({ onlyReturnExisting: true });
    return client.getAccountUrl();
  } catch {
    const contact = options.contactEmail === undefined ? {} : { contact: [`mailto:${options.contactEmail}`] };
    await client.createAccount({ termsOfServiceAgreed: true, ...contact });
    return client.getAccountUrl();
  }
}

async function validateAll(issuance: Issuance, client: Client, order: Order): Promise<void> {
  for (const authorization of await client.getAuthorizations(order)) {
    if (authorization.status === "valid") continue;
    await validate(issuance, client, authorization);
  }
}

async function validate(issuance: Issuance, client: Client, authorization: Authorization): Promise<void> {
  const { challenge: method } = issuance.options;
  const name = authorization.identifier.value;
  const challenge = authorization.challenges.find((offered) => offered.type === method.type);
  if (challenge === undefined) {
    const offered = authorization.challenges.map((c) => c.type).join(", ");
    throw new Error(`the CA offers no ${method.type} challenge for ${name} (offered: ${offered})`);
  }
  const keyAuthorization = await client.getChallengeKeyAuthorization(challenge);
  const cleanup = await publish(issuance, method, authorization, challenge.token, keyAuthorization);
  try {
    await client.completeChallenge(challenge);
    await client.waitForValidStatus(challenge);
  } finally {
    await cleanup().catch((error: unknown) => warn(issuance, error));
  }
}

/** Makes the key authorization visible to the CA; returns the (idempotent) undo. */
async function publish(
  issuance: Issuance,
  method: AcmeChallenge,
  authorization: Authorization,
  token: string,
  keyAuthorization: string,
): Promise<() => Promise<void>> {
  const fqdn = dnsChallengeName(authorization.identifier.value);
  const undo = once(async () => {
    if (method.type === "http-01") method.responder.delete(token);
    else await runDnsHook(method.hook, "clear", fqdn, keyAuthorization);
  });
  issuance.cleanups.push(undo);
  if (method.type === "http-01") method.responder.set(token, keyAuthorization);
  else await runDnsHook(method.hook, "set", fqdn, keyAuthorization, issuance.http.signal);
  return undo;
}

function once(action: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => {
    running ??= action();
    return running;
  };
}

function warn(issuance: Issuance, error: unknown): void {
  issuance.options.onWarning?.(scrub(describeError(error), issuance.secrets));
}

async function runCleanups(issuance: Issuance): Promise<void> {
  await Promise.all(
    issuance.cleanups.map((cleanup) => cleanup().catch((error: unknown) => warn(issuance, error))),
  );
}

async function createCsrPem(issuance: Issuance, key: GeneratedKey): Promise<string> {
  const { domain, kind } = issuance;
  const csr = await Pkcs10CertificateRequestGenerator.create(
    {
      name: domain.length <= MAX_COMMON_NAME ? [{ CN: [domain] }] : undefined,
      keys: key.keys,
      signingAlgorithm: key.signingAlgorithm,
      extensions: [
        new SubjectAlternativeNameExtension([{ type: kind === "ip" ? "ip" : "dns", value: domain }]),
      ],
    },
    webcrypto,
  );
  return csr.toString("pem");
}

/** Runs one step, turning any failure into an AcmeIssueError that names the step. */
async function step<T>(issuance: Issuance, name: AcmeStep, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof AcmeIssueError) throw error;
    if (error instanceof AcmeCancelledError) throw error;
    const text = isLostResponseCrash(error) ? describeLostResponse(issuance.http) : describeError(error);
    const detail = scrub(text, issuance.secrets);
    // No `cause`: axios errors carry request bodies and agents, and logs must stay free of secrets.
    throw new AcmeIssueError(name, `${detail}${hintFor(name, detail)}`);
  }
}

/** Settles with `work`, or rejects as soon as `signal` aborts (the deadline or the caller's cancel). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal, deadlineMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      const isTimeout = signal.reason instanceof Error && signal.reason.name === "TimeoutError";
      const detail = isTimeout ? `no result within ${deadlineMs} ms` : "the issuance was cancelled";
      reject(new AcmeIssueError("waiting for the CA", detail));
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    work
      .then(resolve, (error: unknown) => {
        reject(
          error instanceof AcmeCancelledError
            ? new AcmeIssueError("waiting for the CA", error.message)
            : error,
        );
      })
      .finally(() => signal.removeEventListener("abort", onAbort));
  });
}
