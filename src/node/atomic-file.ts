// Files the agent must never leave half-written (its state, certificates, the core's config): written
// to a temporary name in the same directory, flushed to disk, then renamed over the old one.

import { randomBytes } from "node:crypto";
import { type FileHandle, open, rename, rm } from "node:fs/promises";

export async function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o600): Promise<void> {
  await writeFileAtomicWith(path, (handle) => handle.writeFile(data), mode);
}

/** The same, for a file written in parts: `write` gets the temporary file's handle. */
export async function writeFileAtomicWith(
  path: string,
  write: (handle: FileHandle) => Promise<void>,
  mode = 0o600,
): Promise<void> {
  const temporary = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  const handle = await open(temporary, "w", mode);
  try {
    await write(handle);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}
