// "Change…" over the selected users: extend expiry, add data, reset usage, enable or disable, through
// POST /api/users/bulk-actions (one call for up to 10,000 users); confirmed first, the count answered
// shown after. The actions offered are the ones the role may run (support: extend and reset).
import { Alert, Button, Group, Modal, NumberInput, Select, Stack, Text } from "@mantine/core";
import { useState } from "react";
import { keys } from "../../api/keys.ts";
import { useChange } from "../../api/mutation.ts";
import type { User } from "../../api/types.ts";
import { usersApi } from "../../api/users.ts";
import { useT } from "../../i18n/i18n.tsx";
import { ErrorAlert } from "../../ui/errors.tsx";
import { UNITS, type Unit } from "./userForm.tsx";

type Kind = "extend_expiry" | "add_data_limit" | "reset_usage" | "enable" | "disable";

function actionOf(kind: Kind, amount: number, unit: Unit) {
  switch (kind) {
    case "extend_expiry":
      return { type: "extend_expiry" as const, days: amount };
    case "add_data_limit":
      return { type: "add_data_limit" as const, bytes: Math.round(amount * UNITS[unit]) };
    case "reset_usage":
      return { type: "reset_usage" as const };
    case "enable":
      return { type: "set_status" as const, status: "active" as const };
    case "disable":
      return { type: "set_status" as const, status: "disabled" as const };
  }
}

export function ChangeUsersModal({
  users,
  canWrite,
  onClose,
}: {
  users: User[];
  /** users.write: every action; without it (support) only extend expiry and reset usage. */
  canWrite: boolean;
  onClose: () => void;
}) {
  const t = useT();
  const kinds: Kind[] = canWrite
    ? ["extend_expiry", "add_data_limit", "reset_usage", "enable", "disable"]
    : ["extend_expiry", "reset_usage"];
  const [kind, setKind] = useState<Kind>("extend_expiry");
  const [amount, setAmount] = useState<number | string>(30);
  const [unit, setUnit] = useState<Unit>("GiB");
  const [confirming, setConfirming] = useState(false);
  const change = useChange(
    () => usersApi.bulkAction({ action: actionOf(kind, Number(amount), unit), ids: users.map((u) => u.id) }),
    {
      invalidates: [keys.users.all],
      quiet: true,
      onSuccess: () => setConfirming(false),
      onError: () => setConfirming(false),
    },
  );
  const needsAmount = kind === "extend_expiry" || kind === "add_data_limit";
  const amountOk = !needsAmount || (typeof amount === "number" && amount > 0);
  const done = change.data;
  return (
    <Modal opened onClose={onClose} title={t("change.title", { count: users.length })}>
      <Stack>
        <Select
          label={t("change.action")}
          data={kinds.map((k) => ({ value: k, label: t(`change.${k}`) }))}
          value={kind}
          onChange={(value) => {
            if (value === null) return;
            setKind(value as Kind);
            setAmount(value === "extend_expiry" ? 30 : 10);
            change.reset();
          }}
          allowDeselect={false}
          data-testid="change-action"
        />
        {needsAmount && (
          <Group align="flex-end" gap="xs">
            <NumberInput
              label={kind === "extend_expiry" ? t("change.days") : t("change.amount")}
              value={amount}
              onChange={setAmount}
              min={kind === "extend_expiry" ? 1 : 0}
              allowDecimal={kind === "add_data_limit"}
              w={160}
              data-testid="change-amount"
            />
            {kind === "add_data_limit" && (
              <Select
                aria-label={t("limits.unit")}
                data={Object.keys(UNITS)}
                value={unit}
                onChange={(value) => value !== null && setUnit(value as keyof typeof UNITS)}
                allowDeselect={false}
                w={90}
              />
            )}
          </Group>
        )}
        <Text size="xs" c="dimmed">
          {t(`change.${kind}.hint`)}
        </Text>
        {change.error && <ErrorAlert error={change.error} />}
        {done !== undefined && (
          <Alert color="teal" data-testid="change-result">
            {t("change.result", { changed: done.changed, matched: done.matched })}
          </Alert>
        )}
        {confirming && done === undefined && (
          <Alert color="yellow" title={t("confirm.title")}>
            {t("change.confirm", { action: t(`change.${kind}`), count: users.length })}
          </Alert>
        )}
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            {t("common.close")}
          </Button>
          {done === undefined &&
            (confirming ? (
              <Button loading={change.isPending} onClick={() => change.mutate()} data-testid="change-confirm">
                {t("confirm.yes")}
              </Button>
            ) : (
              <Button disabled={!amountOk} onClick={() => setConfirming(true)} data-testid="change-apply">
                {t("change.apply")}
              </Button>
            ))}
        </Group>
      </Stack>
    </Modal>
  );
}
