// Names people type (users, templates): stored trimmed, and refused when nothing is left.
import { ValidationError } from "./errors.ts";

export function trimName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0) {
    throw new ValidationError("name must not be blank", [
      { path: "body.name", message: "must not be blank" },
    ]);
  }
  return trimmed;
}
