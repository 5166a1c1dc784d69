// A failure the user can act on (a port in use, an unreachable database, a bad backup file): main.ts
// prints it as one line without a stack trace and exits with its code.
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

export function messageOf(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return messageOf(error.errors[0]);
  return error instanceof Error ? error.message : String(error);
}

/** Runs node:util parseArgs; an unknown or malformed option is a usage error (exit 2), not a trace. */
export function parseOptions<T>(usage: string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw new CliError(`${messageOf(error)}\n\n${usage}`, 2);
  }
}
