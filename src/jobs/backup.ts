// Scheduled backups (PORTCULLIS_BACKUP_DIR): every check, take a backup when the newest one in the
// directory is an interval old, then delete ours beyond the newest `keep`. Deciding by the files, not
// by a timer, means restarts neither skip a backup nor take an extra one. Rules: features/backup/schedule.ts.
import { mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import type { DialectName } from "../db/dialect.ts";
import type { BackupService } from "../features/backup/backup.service.ts";
import {
  backupFileName,
  backupsToDelete,
  isBackupDue,
  isPartialBackup,
} from "../features/backup/schedule.ts";
import type { Job } from "./runner.ts";

export type ScheduledBackupOptions = {
  dir: string;
  intervalMinutes: number;
  keep: number;
  isKeyIncluded: boolean;
  dialect: DialectName;
  now?: () => Date;
};

/** Checked once a minute (or per interval, if shorter): a due backup starts within a minute. */
const CHECK_MS = 60_000;

export function scheduledBackupJob(
  options: ScheduledBackupOptions,
  backups: BackupService,
  logger: Logger,
): Job {
  const intervalMs = options.intervalMinutes * 60_000;
  const now = options.now ?? (() => new Date());
  let isKeyNoted = false;
  return {
    name: "backup",
    intervalMs: Math.min(CHECK_MS, intervalMs),
    async run() {
      mkdirSync(options.dir, { recursive: true, mode: 0o700 });
      const names = readdirSync(options.dir);
      removeStalePartials(options.dir, names, now());
      if (!isBackupDue(names, now(), intervalMs)) return;
      const file = join(options.dir, backupFileName(now(), options.dialect));
      const result = await backups.backup(file, { withKey: options.isKeyIncluded });
      logger.info(
        {
          job: "backup",
          file,
          bytes: result.bytes,
          duration_ms: result.durationMs,
          key_included: result.isKeyIncluded,
        },
        "backup written",
      );
      // Said once per process; a warning when the key is in the files, since it opens what they seal.
      if (!isKeyNoted) {
        if (result.isKeyIncluded) logger.warn({ job: "backup", sealed: result.sealed }, result.keyNote);
        else logger.info({ job: "backup" }, result.keyNote);
      }
      isKeyNoted = true;
      for (const name of backupsToDelete(readdirSync(options.dir), options.keep)) {
        rmSync(join(options.dir, name), { force: true });
        logger.info({ job: "backup", file: join(options.dir, name) }, "old backup deleted");
      }
    },
  };
}

/** Temporary files a crash left behind (an hour old: no backup runs that long). */
function removeStalePartials(dir: string, names: readonly string[], now: Date): void {
  for (const name of names.filter(isPartialBackup)) {
    const path = join(dir, name);
    if (now.getTime() - statSync(path).mtimeMs > 3_600_000) rmSync(path, { force: true });
  }
}
