// Scheduled backups, the decisions only: how a scheduled backup is named, whether one is due, and
// which old ones go. Pure, so the job (jobs/backup.ts) is a thin loop around them. Only files named
// like ours are ever considered: a backup directory may hold other things.
import type { DialectName } from "../../db/dialect.ts";

const EXTENSIONS: Record<DialectName, string> = { sqlite: "db", postgres: "pgdump" };
const NAME = /^portcullis-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z\.(db|pgdump)$/;

/** `portcullis-20260501T030000123Z.db`: sorts by time, no characters any filesystem refuses. */
export function backupFileName(at: Date, dialect: DialectName): string {
  const stamp = at.toISOString().replace(/[-:.]/g, "");
  return `portcullis-${stamp}.${EXTENSIONS[dialect]}`;
}

/** When a file of ours was taken, from its name; undefined for any other file. */
export function takenAt(name: string): Date | undefined {
  const match = NAME.exec(name);
  if (match === null) return undefined;
  const [, y, mo, d, h, mi, s, ms] = match;
  const at = new Date(`${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}Z`);
  return Number.isNaN(at.getTime()) ? undefined : at;
}

/**
 * Due when there is no backup yet, the newest is `intervalMs` old, or the newest lies more than an
 * interval in the future (the clock was set back: waiting for it would mean no backups for that long).
 */
export function isBackupDue(names: readonly string[], now: Date, intervalMs: number): boolean {
  const newest = Math.max(...names.map((name) => takenAt(name)?.getTime() ?? Number.NEGATIVE_INFINITY));
  if (newest === Number.NEGATIVE_INFINITY) return true;
  const ageMs = now.getTime() - newest;
  return ageMs >= intervalMs || ageMs < -intervalMs;
}

/** Our backups beyond the newest `keep`, oldest first; other files are never listed. */
export function backupsToDelete(names: readonly string[], keep: number): string[] {
  const ours = names
    .map((name) => ({ name, at: takenAt(name)?.getTime() }))
    .filter((entry): entry is { name: string; at: number } => entry.at !== undefined)
    .sort((a, b) => b.at - a.at || b.name.localeCompare(a.name));
  return ours
    .slice(keep)
    .reverse()
    .map((entry) => entry.name);
}

/** A temporary file of an unfinished backup of ours (backup-meta.ts partialPath). */
export function isPartialBackup(name: string): boolean {
  return /^\.portcullis-.+\.[0-9a-f]{8}\.partial$/.test(name);
}
