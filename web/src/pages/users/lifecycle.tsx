// A user's lifecycle at a glance, the same in the table and on the user page: the status as a coloured
// badge, usage against the limit with a bar, and expiry relative to now (orange within a week, red
// once past).
import { Group, Progress, Stack, Text, Tooltip } from "@mantine/core";
import type { User } from "../../api/types.ts";
import { type Language, useI18n, useT } from "../../i18n/i18n.tsx";
import { formatDate } from "../../ui/format.ts";
import { Bytes } from "../../ui/Num.tsx";
import { STATE_COLORS, StateBadge } from "../../ui/StatusBadge.tsx";

export type UserStatus = User["status"];
export const USER_STATUSES: UserStatus[] = ["active", "disabled", "limited", "expired", "on_hold"];

export function UserStatusBadge({ status }: { status: UserStatus }) {
  return (
    <StateBadge
      state={status}
      colors={STATE_COLORS.user}
      label={`userStatus.${status}`}
      testId="user-status"
    />
  );
}

/** used ÷ limit as a percentage (null without a limit; a zero limit is full). */
export function usedPercent(user: Pick<User, "used_bytes" | "data_limit_bytes">): number | null {
  if (user.data_limit_bytes === null) return null;
  if (user.data_limit_bytes === 0) return 100;
  return (user.used_bytes / user.data_limit_bytes) * 100;
}

export function UsageCell({ user }: { user: Pick<User, "used_bytes" | "data_limit_bytes"> }) {
  const t = useT();
  const percent = usedPercent(user);
  return (
    <Stack gap={2} miw={120} data-testid="user-usage">
      <Text size="xs">
        <Bytes value={user.used_bytes} /> /{" "}
        {user.data_limit_bytes === null ? t("limits.unlimited") : <Bytes value={user.data_limit_bytes} />}
      </Text>
      {percent !== null && (
        <Progress
          size="sm"
          value={Math.min(100, percent)}
          color={percent >= 100 ? "red" : percent >= 80 ? "orange" : "teal"}
          aria-label={t("limits.usedPercent", { percent: Math.floor(percent) })}
        />
      )}
    </Stack>
  );
}

const DAY = 86_400_000;

/** "in 3 days", "2 hours ago", in the operator's language. */
export function relativeTime(iso: string, language: Language, now = Date.now()): string {
  const ms = new Date(iso).getTime() - now;
  const format = new Intl.RelativeTimeFormat(language, { numeric: "auto" });
  const abs = Math.abs(ms);
  if (abs >= DAY) return format.format(Math.round(ms / DAY), "day");
  if (abs >= 3_600_000) return format.format(Math.round(ms / 3_600_000), "hour");
  return format.format(Math.round(ms / 60_000), "minute");
}

export function ExpiryCell({ expireAt }: { expireAt: string | null }) {
  const { t, language } = useI18n();
  if (expireAt === null) {
    return (
      <Text size="sm" c="dimmed" data-testid="user-expiry">
        {t("limits.never")}
      </Text>
    );
  }
  const left = new Date(expireAt).getTime() - Date.now();
  // The light badges' text colours: AA contrast in both schemes (theme.ts).
  const color =
    left <= 0
      ? "var(--mantine-color-red-light-color)"
      : left <= 7 * DAY
        ? "var(--mantine-color-orange-light-color)"
        : undefined;
  return (
    <Tooltip label={formatDate(expireAt, language)}>
      <Group gap={4} wrap="nowrap">
        <Text
          size="sm"
          c={color}
          fw={color ? 600 : undefined}
          data-testid="user-expiry"
          data-state={left <= 0 ? "past" : left <= 7 * DAY ? "soon" : "later"}
        >
          {relativeTime(expireAt, language)}
        </Text>
      </Group>
    </Tooltip>
  );
}
