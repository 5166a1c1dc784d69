// /api/import (issue 51; owners): upload a peer panel's SQLite file, start an import job from it or
// from a postgres:// / mysql:// URL (a dry run first, then the import), and follow the job. The
// dashboard's Import page uses these; `portcullis import` is the same importer (docs/MIGRATION.md).
import type { Readable } from "node:stream";
import { Type } from "typebox";
import { AppError, NotFoundError } from "../../lib/errors.ts";
import type { App } from "../../lib/http.ts";
import { problems } from "../../lib/schemas.ts";
import type { ImportJobs } from "./import-jobs.service.ts";

const Tally = Type.Object({
  found: Type.Integer(),
  created: Type.Integer(),
  already: Type.Integer(),
  left_out: Type.Integer(),
});

const Report = Type.Object(
  {
    source: Type.String({ description: "marzban or 3x-ui" }),
    dry_run: Type.Boolean(),
    users: Tally,
    grants: Tally,
    inbounds: Type.Object({
      ...Tally.properties,
      mapped: Type.Record(Type.String(), Type.String(), {
        description: "the peer's inbound tag → the Portcullis inbound id",
      }),
    }),
    templates: Type.Object({ created: Type.Integer(), already: Type.Integer() }),
    hosts: Tally,
    admins: Tally,
    subscription_urls: Type.Object({
      links: Tally,
      secret: Type.Union([Type.Literal("stored"), Type.Literal("already"), Type.Literal("none")]),
    }),
    left_out: Type.Record(Type.String(), Type.Integer(), {
      description: "what was left out or changed, and why: reason → count",
    }),
    duration_ms: Type.Integer(),
  },
  { description: "the same report as `portcullis import … --json`" },
);

export const ImportJobView = Type.Object({
  id: Type.String({ format: "uuid" }),
  kind: Type.Union([Type.Literal("marzban"), Type.Literal("3x-ui")]),
  source: Type.String({ description: '"upload", or the URL with its password replaced by ***' }),
  server_id: Type.Union([Type.String({ format: "uuid" }), Type.Null()]),
  dry_run: Type.Boolean(),
  state: Type.Union([Type.Literal("running"), Type.Literal("done"), Type.Literal("failed")]),
  progress: Type.Object(
    { done: Type.Integer(), total: Type.Integer() },
    { description: "users handled of the users read" },
  ),
  report: Type.Union([Report, Type.Null()]),
  error: Type.Union([
    Type.Object(
      { status: Type.Integer(), code: Type.String(), detail: Type.String() },
      { description: "why the job failed, as a problem's fields" },
    ),
    Type.Null(),
  ]),
  started_at: Type.String({ format: "date-time" }),
  finished_at: Type.Union([Type.String({ format: "date-time" }), Type.Null()]),
});

const ImportStartBody = Type.Object(
  {
    kind: Type.Union([Type.Literal("marzban"), Type.Literal("3x-ui")], {
      description: "marzban covers PasarGuard too",
    }),
    server_id: Type.Optional(
      Type.Union([Type.String({ format: "uuid" }), Type.Null()], {
        description: "the server the peer's inbounds go to; without one, users only",
      }),
    ),
    dry_run: Type.Optional(Type.Boolean({ default: false, description: "read and report, write nothing" })),
    upload_id: Type.Optional(Type.String({ format: "uuid", description: "from POST /api/import/uploads" })),
    url: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2048,
        description: "postgres://, postgresql://, mysql:// or mariadb:// URL; never echoed or logged",
      }),
    ),
    xray_config: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: "Marzban's xray_config.json (its inbounds become templates and inbounds)",
      }),
    ),
  },
  { additionalProperties: false },
);

export function importRoutes(app: App, jobs: ImportJobs): void {
  const tags = ["import"];
  app.register(async (scope) => {
    // The upload is streamed to its file, never held in memory (the 1 MiB body limit is for JSON).
    scope.addContentTypeParser("application/octet-stream", (_request, payload, done) => done(null, payload));
    scope.post(
      "/api/import/uploads",
      {
        config: { guardInput: false },
        schema: {
          tags,
          summary: "Upload a peer panel's SQLite database (Marzban's db.sqlite3, 3x-ui's x-ui.db)",
          description:
            "The raw file as application/octet-stream, at most 1 GiB. Kept in a private file until a real import of it ends, another upload replaces it, or the server restarts.",
          consumes: ["application/octet-stream"],
          response: {
            201: Type.Object({ id: Type.String({ format: "uuid" }), bytes: Type.Integer() }),
            ...problems(403, 409, 413, 415),
          },
        },
      },
      async (request, reply) => {
        if (request.headers["content-type"]?.split(";")[0]?.trim() !== "application/octet-stream") {
          throw new AppError("unsupported_media_type", "send the file as application/octet-stream");
        }
        const length = Number(request.headers["content-length"]);
        const stored = await jobs.upload(
          request.body as Readable,
          Number.isFinite(length) ? length : undefined,
        );
        return reply.code(201).send(stored);
      },
    );
  });
  app.post(
    "/api/import/jobs",
    {
      schema: {
        tags,
        summary: "Start an import (or its dry run) from an upload or a database URL",
        description:
          "Reads the source first: a file or URL that cannot be opened, or a database of another kind, is a 400. Then writes in the background: follow it with GET /api/import/job. One at a time (409 import_running).",
        body: ImportStartBody,
        response: { 202: ImportJobView, ...problems(403, 404, 409) },
      },
    },
    async (request, reply) => reply.code(202).send(await jobs.start(request.body)),
  );
  app.get(
    "/api/import/job",
    {
      schema: {
        tags,
        summary: "The latest import job: state, progress, report or error",
        response: { 200: ImportJobView, ...problems(403, 404) },
      },
    },
    async () => {
      const job = jobs.current();
      if (job === null) throw new NotFoundError("import job");
      return job;
    },
  );
}
