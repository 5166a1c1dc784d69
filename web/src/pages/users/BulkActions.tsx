// Bulk work on the selected users: grant one inbound to all of them (one bulk call), or delete them
// (one call each, four at a time, with progress and every failure listed).
import { Alert, Button, Group, List, Modal, Paper, Progress, Select, Stack, Text } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { ApiError } from "../../api/client.ts";
import { keys } from "../../api/keys.ts";
import { useChange } from "../../api/mutation.ts";
import { inboundsApi, useAllInbounds } from "../../api/servers.ts";
import type { BulkGrantReport, User } from "../../api/types.ts";
import { usersApi } from "../../api/users.ts";
import { useT } from "../../i18n/i18n.tsx";
import { ConfirmButton } from "../../ui/Confirm.tsx";
import { ErrorAlert } from "../../ui/errors.tsx";
import { ChangeUsersModal } from "./ChangeUsers.tsx";

type DeleteProgress = { done: number; total: number; failures: { name: string; detail: string }[] };

async function deleteAll(users: User[], onProgress: (p: DeleteProgress) => void): Promise<DeleteProgress> {
  const progress: DeleteProgress = { done: 0, total: users.length, failures: [] };
  const queue = [...users];
  const worker = async () => {
    for (let user = queue.shift(); user !== undefined; user = queue.shift()) {
      try {
        await usersApi.remove(user.id);
      } catch (error) {
        progress.failures.push({
          name: user.name,
          detail: error instanceof ApiError ? error.message : String(error),
        });
      }
      progress.done++;
      onProgress({ ...progress });
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return progress;
}

function GrantModal({ users, onClose }: { users: User[]; onClose: (granted: boolean) => void }) {
  const t = useT();
  const { choices, isLoading, error } = useAllInbounds();
  const [choice, setChoice] = useState<string | null>(null);
  const grant = useChange(
    (key: string) => {
      const picked = choices.find((c) => c.inbound.id === key);
      if (picked === undefined) throw new Error("pick an inbound");
      const path = { server_id: picked.server.id, inbound_id: picked.inbound.id };
      return inboundsApi.grantMany(
        path,
        users.map((u) => u.id),
      );
    },
    { invalidates: [keys.allAccess] },
  );
  const report: BulkGrantReport | undefined = grant.data;
  return (
    <Modal
      opened
      onClose={() => onClose(report !== undefined)}
      title={t("bulk.grantTitle", { count: users.length })}
    >
      <Stack>
        {error !== undefined && <ErrorAlert error={error} />}
        <Select
          label={t("grants.inbound")}
          placeholder={isLoading ? t("common.loading") : t("grants.pickInbound")}
          data={choices.map((c) => ({ value: c.inbound.id, label: c.label }))}
          value={choice}
          onChange={setChoice}
          searchable
          nothingFoundMessage={t("grants.noInbounds")}
        />
        {report !== undefined && (
          <Alert color={report.sync.error > 0 ? "orange" : "teal"} data-testid="bulk-report">
            {t("bulk.grantReport", {
              granted: report.granted,
              already: report.already_granted.length,
              unknown: report.unknown_users.length,
              synced: report.sync.synced,
              pending: report.sync.pending,
              error: report.sync.error,
            })}
          </Alert>
        )}
        <Group justify="flex-end">
          <Button variant="default" onClick={() => onClose(report !== undefined)}>
            {t("common.close")}
          </Button>
          <Button
            disabled={choice === null || report !== undefined}
            loading={grant.isPending}
            onClick={() => choice !== null && grant.mutate(choice)}
          >
            {t("bulk.grant")}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

export function BulkActions({
  selected,
  onDone,
  canGrant,
  canDelete,
  canChange = false,
}: {
  selected: User[];
  onDone: () => void;
  canGrant: boolean;
  canDelete: boolean;
  /** users.lifecycle: the "Change…" actions (every one of them with users.write, canDelete). */
  canChange?: boolean;
}) {
  const t = useT();
  const queryClient = useQueryClient();
  const [isGranting, setGranting] = useState(false);
  const [isChanging, setChanging] = useState(false);
  const [progress, setProgress] = useState<DeleteProgress>();
  if (selected.length === 0 && progress === undefined) return null;

  const runDelete = async () => {
    const result = await deleteAll(selected, setProgress);
    await queryClient.invalidateQueries({ queryKey: keys.users.all });
    if (result.failures.length === 0) setProgress(undefined);
    onDone();
  };
  const isDeleting = progress !== undefined && progress.done < progress.total;
  return (
    <Paper withBorder p="sm" data-testid="bulk-actions">
      <Stack gap="xs">
        <Group justify="space-between">
          <Text size="sm">{t("bulk.selected", { count: selected.length })}</Text>
          <Group gap="xs">
            {canChange && (
              <Button
                size="xs"
                variant="light"
                disabled={selected.length === 0}
                onClick={() => setChanging(true)}
                data-testid="bulk-change"
              >
                {t("change.open")}
              </Button>
            )}
            {canGrant && (
              <Button
                size="xs"
                variant="light"
                disabled={selected.length === 0}
                onClick={() => setGranting(true)}
              >
                {t("bulk.grant")}
              </Button>
            )}
            {canDelete && (
              <ConfirmButton
                size="xs"
                variant="light"
                disabled={selected.length === 0 || isDeleting}
                question={t("bulk.deleteConfirm", { count: selected.length })}
                onConfirm={runDelete}
              >
                {t("bulk.delete")}
              </ConfirmButton>
            )}
            <Button size="xs" variant="subtle" onClick={onDone} disabled={isDeleting}>
              {t("bulk.clear")}
            </Button>
          </Group>
        </Group>
        {progress !== undefined && (
          <>
            <Progress
              value={(progress.done / Math.max(1, progress.total)) * 100}
              aria-label={t("bulk.progress", { done: progress.done, total: progress.total })}
            />
            <Text size="xs" c="dimmed">
              {t("bulk.progress", { done: progress.done, total: progress.total })}
            </Text>
            {progress.failures.length > 0 && (
              <Alert
                color="red"
                title={t("bulk.failures", { count: progress.failures.length })}
                withCloseButton
                onClose={() => setProgress(undefined)}
              >
                <List size="sm">
                  {progress.failures.map((f) => (
                    <List.Item key={f.name}>
                      {f.name}: {f.detail}
                    </List.Item>
                  ))}
                </List>
              </Alert>
            )}
          </>
        )}
      </Stack>
      {isGranting && (
        <GrantModal
          users={selected}
          onClose={() => {
            setGranting(false);
          }}
        />
      )}
      {isChanging && (
        <ChangeUsersModal users={selected} canWrite={canDelete} onClose={() => setChanging(false)} />
      )}
    </Paper>
  );
}
