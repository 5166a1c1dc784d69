// The user page's plan card (issue 49): renew with a plan (what it will do is shown first: the new
// expiry and whether usage starts over), the next plan the lifecycle job applies once the user is
// limited or expired, the groups the user belongs to, and for owners the admin who owns the user.
import { Button, Card, Group, MultiSelect, Select, Stack, Text, Title } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { useAdmins } from "../../api/admin.ts";
import { plansApi, useGroups, usePlans } from "../../api/groups.ts";
import { keys } from "../../api/keys.ts";
import { useChange } from "../../api/mutation.ts";
import type { User, UserUpdate } from "../../api/types.ts";
import { usersApi } from "../../api/users.ts";
import { useCan } from "../../auth/me.ts";
import { useI18n } from "../../i18n/i18n.tsx";
import { useConfirm } from "../../ui/Confirm.tsx";
import { formatDate } from "../../ui/format.ts";
import { renewedExpiry } from "./plans.tsx";

const NOBODY = "none";

export function PlanCard({ user }: { user: User }) {
  const { t, language } = useI18n();
  const can = useCan();
  const queryClient = useQueryClient();
  const [confirm, confirmModal] = useConfirm();
  const canWrite = can("users.write");
  const canJoin = can("access.write") && can("inbounds.read");
  const isOwner = can("admins.manage");
  const plans = usePlans();
  const groups = useGroups(can("inbounds.read"));
  const admins = useAdmins(isOwner);
  const [renewWith, setRenewWith] = useState<string | null>(null);
  const [groupIds, setGroupIds] = useState<string[]>(user.group_ids ?? []);
  useEffect(() => setGroupIds(user.group_ids ?? []), [user.updated_at]);
  const stored = (saved: User) => {
    queryClient.setQueryData(keys.users.one(saved.id), saved);
  };
  const stale = [keys.users.lists(), keys.users.access(user.id), keys.groups.all];
  const update = useChange((body: UserUpdate) => usersApi.update(user.id, body), {
    invalidates: stale,
    done: t("common.saved"),
    onSuccess: stored,
  });
  const renew = useChange((planId: string) => plansApi.renew(user.id, planId), {
    invalidates: [...stale, keys.users.usage(user.id)],
    done: (renewed) =>
      t("plans.renewed", {
        expiry:
          renewed.expire_at === null ? t("plans.neverExpires") : formatDate(renewed.expire_at, language),
      }),
    onSuccess: (renewed) => {
      stored(renewed);
      setRenewWith(null);
    },
  });
  const move = useChange((owner: string | null) => usersApi.moveOwner(user.id, owner), {
    invalidates: [keys.users.lists(), keys.admins.all],
    done: t("owner.moved"),
    onSuccess: stored,
  });
  const choices = (plans.data ?? []).map((p) => ({ value: p.id, label: p.name }));
  const plan = plans.data?.find((p) => p.id === renewWith);
  const expiry = plan === undefined ? undefined : renewedExpiry(user, plan);
  const ownerChoices = [
    { value: NOBODY, label: t("owner.nobody") },
    ...(admins.data ?? []).map((a) => ({ value: a.id, label: a.username })),
  ];
  const groupsChanged =
    groupIds.length !== (user.group_ids ?? []).length || groupIds.some((id) => !user.group_ids?.includes(id));
  return (
    <Card withBorder data-testid="plan-card">
      <Stack gap="sm">
        <Title order={3}>{t("plans.cardTitle")}</Title>
        {canWrite && choices.length > 0 && (
          <Stack gap={4}>
            <Group align="flex-end" wrap="wrap">
              <Select
                style={{ flex: 1, minWidth: 200 }}
                label={t("plans.renewWith")}
                placeholder={t("plans.pick")}
                data={choices}
                value={renewWith}
                onChange={setRenewWith}
                searchable
                data-testid="renew-plan"
              />
              <Button
                disabled={renewWith === null}
                loading={renew.isPending}
                onClick={() => renewWith !== null && renew.mutate(renewWith)}
                data-testid="renew-submit"
              >
                {t("plans.renew")}
              </Button>
            </Group>
            {plan !== undefined && (
              <Text size="sm" c="dimmed" aria-live="polite" data-testid="renew-preview">
                {expiry === null || expiry === undefined
                  ? t("plans.renewNever")
                  : t("plans.renewExpiry", { expiry: formatDate(expiry.toISOString(), language) })}{" "}
                {plan.reset_usage ? t("plans.renewResets") : t("plans.renewKeeps")}
              </Text>
            )}
          </Stack>
        )}
        {choices.length > 0 && (
          <Select
            label={t("plans.nextPlan")}
            description={t("plans.nextPlanHint")}
            placeholder={t("plans.noPlan")}
            data={choices}
            value={user.next_plan_id}
            onChange={(value) => update.mutate({ next_plan_id: value })}
            clearable
            readOnly={!canWrite}
            disabled={update.isPending}
            data-testid="next-plan"
          />
        )}
        {groups.data !== undefined && (groups.data.length > 0 || groupIds.length > 0) && (
          <Group align="flex-end" wrap="wrap">
            <MultiSelect
              style={{ flex: 1, minWidth: 200 }}
              label={t("plans.userGroups")}
              data={groups.data.map((g) => ({ value: g.id, label: g.name }))}
              value={groupIds}
              onChange={setGroupIds}
              readOnly={!canJoin}
              searchable
              data-testid="user-groups"
            />
            {canJoin && (
              <Button
                variant="light"
                disabled={!groupsChanged}
                loading={update.isPending}
                onClick={() => update.mutate({ group_ids: groupIds })}
                data-testid="user-groups-save"
              >
                {t("common.save")}
              </Button>
            )}
          </Group>
        )}
        {isOwner && admins.data !== undefined && (
          <Select
            label={t("owner.label")}
            description={t("owner.hint")}
            data={ownerChoices}
            value={user.owner_admin_id ?? NOBODY}
            onChange={(value) => {
              const owner = value === null || value === NOBODY ? null : value;
              const name = ownerChoices.find((c) => c.value === (value ?? NOBODY))?.label ?? "";
              confirm(t("owner.moveConfirm", { user: user.name, admin: name }), () => move.mutate(owner));
            }}
            allowDeselect={false}
            disabled={move.isPending}
            data-testid="user-owner"
          />
        )}
      </Stack>
      {confirmModal}
    </Card>
  );
}
