// GET /api/audit: filters and the entry shape.
import { Type } from "typebox";
import { Page, Timestamp, Uuid } from "../../lib/schemas.ts";

export const AuditQuery = Type.Object(
  {
    page: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 }),
    per_page: Type.Integer({ minimum: 1, maximum: 500, default: 50 }),
    actor_id: Type.Optional(Uuid),
    action: Type.Optional(Type.String({ pattern: "^[a-z_.]{1,64}$", description: "e.g. users.create" })),
    target: Type.Optional(Uuid),
    outcome: Type.Optional(
      Type.Union([
        Type.Literal("pending"),
        Type.Literal("succeeded"),
        Type.Literal("failed"),
        Type.Literal("interrupted"),
      ]),
    ),
    from: Type.Optional(Timestamp),
    to: Type.Optional(Timestamp),
  },
  { additionalProperties: false },
);

export const AuditEntryView = Type.Object({
  id: Uuid,
  at: Timestamp,
  actor: Type.Object({
    kind: Type.String({
      description:
        "session | api_key | cli | anonymous | system (a job: the fair-use job's blocks and releases)",
    }),
    id: Type.Union([Uuid, Type.Null()]),
    name: Type.String(),
    token_id: Type.Union([Uuid, Type.Null()]),
  }),
  action: Type.String(),
  method: Type.Union([Type.String(), Type.Null()]),
  route: Type.Union([Type.String(), Type.Null()]),
  targets: Type.Record(Type.String(), Type.String(), { description: "path ids and the created id" }),
  fields: Type.Union([Type.Array(Type.String()), Type.Null()], {
    description:
      "body field names, never values: at most 32, each cut to 64 characters; targets.fields_omitted " +
      "counts the rest",
  }),
  ip: Type.Union([Type.String(), Type.Null()]),
  request_id: Type.Union([Type.String(), Type.Null()]),
  outcome: Type.String({ description: "pending | succeeded | failed | interrupted" }),
  status: Type.Union([Type.Integer(), Type.Null()]),
  finished_at: Type.Union([Timestamp, Type.Null()]),
});

export const AuditPage = Page(AuditEntryView);
