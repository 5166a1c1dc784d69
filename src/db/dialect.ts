// Everything that differs between SQLite and PostgreSQL lives here, so migrations and repositories
// share one code base.
import {
  type ColumnDataType,
  type Kysely,
  type KyselyPlugin,
  OperationNodeTransformer,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  PostgresAdapter,
  type PrimitiveValueListNode,
  type QueryResult,
  type RawBuilder,
  type RootOperationNode,
  sql,
  type UnknownRow,
  type ValueNode,
} from "kysely";

export type DialectName = "sqlite" | "postgres";

export function columnTypes(dialect: DialectName): {
  uuid: ColumnDataType;
  timestamp: ColumnDataType;
  boolean: ColumnDataType;
  json: ColumnDataType;
} {
  return dialect === "postgres"
    ? { uuid: "uuid", timestamp: "timestamptz", boolean: "boolean", json: "text" }
    : { uuid: "text", timestamp: "text", boolean: "integer", json: "text" };
}

/** Row values as the drivers return them → the types the API speaks. */
export const read = {
  timestamp(value: string | Date): string {
    return value instanceof Date ? value.toISOString() : value;
  },
  optionalTimestamp(value: string | Date | null): string | null {
    return value === null ? null : read.timestamp(value);
  },
  bool(value: boolean | number): boolean {
    return value === true || value === 1;
  },
  bigint(value: number | string): number {
    return typeof value === "number" ? value : Number(value);
  },
  optionalBigint(value: number | string | null): number | null {
    return value === null ? null : read.bigint(value);
  },
};

class SqliteValueTransformer extends OperationNodeTransformer {
  protected override transformValue(node: ValueNode): ValueNode {
    return typeof node.value === "boolean" ? { ...node, value: node.value ? 1 : 0 } : node;
  }

  protected override transformPrimitiveValueList(node: PrimitiveValueListNode): PrimitiveValueListNode {
    return { ...node, values: node.values.map((v) => (typeof v === "boolean" ? (v ? 1 : 0) : v)) };
  }
}

/** better-sqlite3 refuses JS booleans; write them as 0/1 so repositories can pass booleans. */
export class SqliteBooleanPlugin implements KyselyPlugin {
  readonly #transformer = new SqliteValueTransformer();

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return this.#transformer.transformNode(args.node);
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

/**
 * Bound parameters per statement: SQLite allows 32,766, PostgreSQL 65,535. An id list of 5,000, or
 * 1,000 rows of up to 30 columns, stays below both, and fewer round trips matter more than size here.
 */
export const IDS_PER_STATEMENT = 5000;
export const ROWS_PER_INSERT = 1000;

/** Escape LIKE wildcards so a search for "50%" matches the text "50%". */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** Column types jsonRows and typedValue cast to on PostgreSQL (SQLite needs no casts). */
export type CastType = "uuid" | "bigint" | "timestamp" | "text";
const PG_TYPES: Record<CastType, string> = {
  uuid: "uuid",
  bigint: "bigint",
  timestamp: "timestamptz",
  text: "text",
};

/**
 * Rows passed as one JSON parameter (an array of arrays) and read back as a derived table with the
 * given columns: any number of rows in one statement, where a VALUES list would meet the
 * bound-parameter limits above. Use it as `FROM ${jsonRows(…)} AS r`.
 */
export function jsonRows(
  dialect: DialectName,
  columns: Readonly<Record<string, CastType>>,
  rows: readonly (readonly (string | number)[])[],
): RawBuilder<unknown> {
  const json = JSON.stringify(rows);
  const names = Object.entries(columns);
  if (dialect === "sqlite") {
    const items = names.map(
      ([name], i) => sql`json_extract(value, ${sql.lit(`$[${i}]`)}) as ${sql.id(name)}`,
    );
    return sql`(select ${sql.join(items)} from json_each(${json}))`;
  }
  const items = names.map(
    ([name, type], i) =>
      sql`cast(e.value ->> ${sql.lit(i)} as ${sql.raw(PG_TYPES[type])}) as ${sql.id(name)}`,
  );
  return sql`(select ${sql.join(items)} from jsonb_array_elements(cast(${json} as jsonb)) as e(value))`;
}

/** A bound value in a SELECT list, typed for its column: PostgreSQL would take a bare parameter as text. */
export function typedValue(
  dialect: DialectName,
  value: string | number,
  type: CastType,
): RawBuilder<unknown> {
  return dialect === "sqlite" ? sql`${value}` : sql`cast(${value} as ${sql.raw(PG_TYPES[type])})`;
}

/** Which dialect a Kysely instance (or transaction) speaks. */
export function dialectOf(db: Pick<Kysely<unknown>, "getExecutor">): DialectName {
  return db.getExecutor().adapter instanceof PostgresAdapter ? "postgres" : "sqlite";
}

/** A timestamp parameter as the column type (PostgreSQL would take a bare parameter for text in CASE). */
export function timestampParam(dialect: DialectName, iso: string): RawBuilder<string> {
  return dialect === "postgres" ? sql<string>`cast(${iso} as timestamptz)` : sql<string>`${iso}`;
}

/** `iso` plus a number of seconds held in a column, as the dialect stores timestamps (toISOString on SQLite). */
export function plusSeconds(dialect: DialectName, iso: string, secondsColumn: string): RawBuilder<string> {
  return dialect === "postgres"
    ? sql<string>`(cast(${iso} as timestamptz) + ${sql.ref(secondsColumn)} * interval '1 second')`
    : sql<string>`strftime('%Y-%m-%dT%H:%M:%fZ', ${iso}, '+' || ${sql.ref(secondsColumn)} || ' seconds')`;
}
