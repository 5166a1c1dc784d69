// The one error every lobby codec failure becomes (bad JSON shape, out-of-range value, malformed bytes),
// so callers catch a single type and always learn which field was wrong.
import { ValidationError } from "../lib/errors.ts";

export class LobbyFormatError extends ValidationError {
  /** Where the problem is, e.g. `lobbies[2].lobby_id`; empty for the message as a whole. */
  readonly path: string;
  readonly reason: string;

  constructor(path: string, reason: string) {
    super(path === "" ? reason : `${path}: ${reason}`, [{ path, message: reason }], "lobby_format_invalid");
    this.path = path;
    this.reason = reason;
  }
}
