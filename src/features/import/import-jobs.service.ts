// Imports started from the API and the dashboard (issue 51): the same readers and writer as
// `portcullis import`, run in the serving process in the background, one at a time. A source is an
// uploaded SQLite file (kept in a private file under DATA_DIR until a real import of it ends, a new
// upload replaces it, or the process restarts) or a postgres:// / mysql:// URL, which is never kept,
// echoed or logged with its password. The job (state, progress, report, error) is kept in
// DATA_DIR/import-job.json, so a restart finds a job it did not finish and marks it failed: running
// the import again completes it (the writer is idempotent and resumable). docs/MIGRATION.md.
import { randomUUID } from "node:crypto";
import {
  closeSync,
  createWriteStream,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { AppError, ConflictError, ValidationError } from "../../lib/errors.ts";
import { toProblem } from "../../lib/problem.ts";
import type { ServersService } from "../servers/servers.service.ts";
import type { ImportReport, ImportService } from "./import.service.ts";
import { readMarzban } from "./marzban.repository.ts";
import type { PeerSnapshot, PeerSource } from "./peer.ts";
import { openSource, type SourceDb } from "./source.repository.ts";
import { readXui } from "./xui.repository.ts";

export type ImportJobState = "running" | "done" | "failed";

export type ImportJob = {
  id: string;
  kind: PeerSource;
  /** "upload", or the URL without its password. */
  source: string;
  server_id: string | null;
  dry_run: boolean;
  state: ImportJobState;
  /** Users handled of the users read (batches committed; a dry run counts as it goes). */
  progress: { done: number; total: number };
  report: ImportReport | null;
  error: { status: number; code: string; detail: string } | null;
  started_at: string;
  finished_at: string | null;
};

export type ImportStart = {
  kind: PeerSource;
  server_id?: string | null;
  dry_run?: boolean;
  upload_id?: string;
  url?: string;
  xray_config?: Record<string, unknown>;
};

/** An uploaded SQLite file may be this large (Marzban's database with 100,000 users is ~100 MB). */
export const MAX_UPLOAD_BYTES = 1024 * 1024 * 1024;
const SQLITE_MAGIC = Buffer.from("SQLite format 3\0", "latin1");
const URL_PATTERN = /^(postgres|postgresql|mysql|mariadb):\/\//i;

/** The URL with its password (raw and decoded) replaced by ***, in any text. */
export function scrubPassword(url: string | undefined, text: string): string {
  if (url === undefined) return text;
  const secrets = new Set<string>();
  const raw = /^[a-z]+:\/\/[^:@/]*:(.*)@[^@]*$/i.exec(url)?.[1];
  if (raw !== undefined && raw !== "") {
    secrets.add(raw);
    try {
      secrets.add(decodeURIComponent(raw));
    } catch {}
  }
  let out = text;
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) out = out.split(secret).join("***");
  return out;
}

export class ImportJobs {
  /** The upload cap; tests lower it. */
  maxUploadBytes = MAX_UPLOAD_BYTES;
  readonly #dir: string;
  readonly #jobFile: string;
  #job: ImportJob | null = null;
  /** Set from a start's first line until its job ends: a second start is a 409 meanwhile. */
  #busy = false;
  #running: Promise<void> | null = null;
  #stopping = false;
  #upload: { id: string; path: string } | null = null;

  constructor(
    dataDir: string,
    private readonly importer: ImportService,
    private readonly servers: ServersService,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.#dir = join(dataDir, "import-uploads");
    this.#jobFile = join(dataDir, "import-job.json");
    this.#job = this.#load();
    if (this.#job?.state === "running") {
      this.#job = {
        ...this.#job,
        state: "failed",
        finished_at: this.now().toISOString(),
        error: {
          status: 409,
          code: "conflict",
          detail:
            "the server stopped before this import finished; start it again: it completes what is missing",
        },
      };
      this.#save();
    }
  }

  /** The latest job (running or finished), or null. */
  current(): ImportJob | null {
    return this.#job === null ? null : structuredClone(this.#job);
  }

  /** Stores an uploaded SQLite file (a stream, at most maxUploadBytes); replaces an earlier upload. */
  async upload(body: Readable, declaredLength?: number): Promise<{ id: string; bytes: number }> {
    if (declaredLength !== undefined && declaredLength > this.maxUploadBytes) {
      body.resume();
      throw tooLarge(this.maxUploadBytes);
    }
    if (this.#busy) {
      body.resume();
      throw new ConflictError("an import is running; upload after it ends", "import_running");
    }
    mkdirSync(this.#dir, { recursive: true, mode: 0o700 });
    const id = randomUUID();
    const path = join(this.#dir, `${id}.sqlite`);
    let bytes = 0;
    const cap = this.maxUploadBytes;
    try {
      await pipeline(
        body,
        async function* (chunks: AsyncIterable<Buffer>) {
          for await (const chunk of chunks) {
            bytes += chunk.length;
            if (bytes > cap) throw tooLarge(cap);
            yield chunk;
          }
        },
        createWriteStream(path, { mode: 0o600, flags: "wx" }),
      );
      if (!startsWithMagic(path)) {
        throw new ValidationError("the upload is not a SQLite database", [
          { path: "body", message: "not a SQLite database file" },
        ]);
      }
    } catch (error) {
      rmSync(path, { force: true });
      throw error;
    }
    this.#dropUpload();
    this.#upload = { id, path };
    return { id, bytes };
  }

  /** Reads the source (a bad file, URL or kind is a 400 here), then writes in the background. */
  async start(input: ImportStart): Promise<ImportJob> {
    if (this.#busy) throw new ConflictError("an import is already running", "import_running");
    this.#busy = true;
    try {
      const snapshot = await this.#read(input);
      const serverId = input.server_id ?? null;
      const dryRun = input.dry_run === true;
      const started = this.now().toISOString();
      const job: ImportJob = {
        id: randomUUID(),
        kind: input.kind,
        source: input.url === undefined ? "upload" : labelOf(input.url),
        server_id: serverId,
        dry_run: dryRun,
        state: "running",
        progress: { done: 0, total: snapshot.users.length },
        report: null,
        error: null,
        started_at: started,
        finished_at: null,
      };
      this.#job = job;
      this.#save();
      this.#running = this.#write(job, snapshot, input);
      return structuredClone(job);
    } catch (error) {
      this.#busy = false;
      throw error;
    }
  }

  /** Stops a running job after its current batch (it ends failed) and waits for it. */
  async close(): Promise<void> {
    this.#stopping = true;
    await this.#running;
    this.#dropUpload();
  }

  async #read(input: ImportStart): Promise<PeerSnapshot> {
    if ((input.upload_id === undefined) === (input.url === undefined)) {
      throw new ValidationError("give either upload_id or url", [
        { path: "body", message: "exactly one of upload_id and url" },
      ]);
    }
    if (input.xray_config !== undefined && input.kind !== "marzban") {
      throw new ValidationError("xray_config is Marzban's", [
        { path: "body.xray_config", message: "only with kind marzban" },
      ]);
    }
    let location: string;
    if (input.url !== undefined) {
      if (!URL_PATTERN.test(input.url)) {
        throw new ValidationError("url: a postgres:// or mysql:// URL", [
          { path: "body.url", message: "a postgres://, postgresql://, mysql:// or mariadb:// URL" },
        ]);
      }
      location = input.url;
    } else {
      if (this.#upload === null || this.#upload.id !== input.upload_id) {
        throw new ValidationError("no such upload: upload the file again", [
          { path: "body.upload_id", message: "not the current upload" },
        ]);
      }
      location = this.#upload.path;
    }
    // A server that does not exist is a 404 before the source is opened.
    if (input.server_id !== undefined && input.server_id !== null) await this.servers.get(input.server_id);
    const where = input.url === undefined ? "the upload" : labelOf(input.url);
    let source: SourceDb;
    try {
      source = await openSource(location);
    } catch (error) {
      const reason = input.url === undefined ? "it is not a SQLite database" : reasonOf(error, input.url);
      throw new ValidationError(`cannot open ${where}: ${reason}`, [
        { path: input.url === undefined ? "body.upload_id" : "body.url", message: "cannot open" },
      ]);
    }
    try {
      if (input.kind === "3x-ui") return await readXui(source);
      return await readMarzban(source, input.xray_config ?? null);
    } catch (error) {
      throw new ValidationError(
        `cannot read ${where} as a ${input.kind} database: ${reasonOf(error, input.url)}`,
        [{ path: "body.kind", message: `not a ${input.kind} database` }],
      );
    } finally {
      await source.close().catch(() => {});
    }
  }

  async #write(job: ImportJob, snapshot: PeerSnapshot, input: ImportStart): Promise<void> {
    try {
      const report = await this.importer.run(snapshot, {
        dryRun: job.dry_run,
        serverId: job.server_id,
        onBatch: (done, total) => {
          job.progress = { done, total };
          if (this.#stopping)
            throw new AppError("conflict", "the server is stopping; start the import again");
        },
      });
      job.report = report;
      job.progress = { done: snapshot.users.length, total: snapshot.users.length };
      job.state = "done";
    } catch (error) {
      const problem = toProblem(error);
      job.state = "failed";
      job.error = {
        status: problem.status,
        code: problem.code,
        detail: scrubPassword(input.url, problem.detail),
      };
    } finally {
      job.finished_at = this.now().toISOString();
      this.#save();
      if (!job.dry_run && job.state === "done" && input.upload_id !== undefined) this.#dropUpload();
      this.#busy = false;
      this.#running = null;
    }
  }

  #dropUpload(): void {
    if (this.#upload !== null) rmSync(this.#upload.path, { force: true });
    this.#upload = null;
  }

  #load(): ImportJob | null {
    try {
      return JSON.parse(readFileSync(this.#jobFile, "utf8")) as ImportJob;
    } catch {
      return null;
    }
  }

  #save(): void {
    try {
      writeFileSync(this.#jobFile, JSON.stringify(this.#job), { mode: 0o600 });
    } catch {
      // DATA_DIR not writable: the job is still answered from memory.
    }
  }
}

function tooLarge(cap: number): AppError {
  return new AppError("payload_too_large", `the upload is larger than ${cap} bytes`);
}

function startsWithMagic(path: string): boolean {
  const fd = openSync(path, "r");
  try {
    const head = Buffer.alloc(SQLITE_MAGIC.length);
    const n = readSync(fd, head, 0, head.length, 0);
    return n === head.length && head.equals(SQLITE_MAGIC);
  } finally {
    closeSync(fd);
  }
}

/** postgres://user:***@host/db: what a job and an error may say about a URL. */
function labelOf(url: string): string {
  return scrubPassword(url, url);
}

function reasonOf(error: unknown, url: string | undefined): string {
  const message = error instanceof Error ? error.message : String(error);
  // openSource's messages name the CLI's option and, for a file, its private path.
  return scrubPassword(url, message.replace(/^--db: /, "")).replace(
    /\/\S*import-uploads\/\S*/g,
    "the upload",
  );
}
