// One group (issue 49): its inbounds across servers (add some, or every inbound of a server in one
// step; remove one) and its members (add one by search or every user matching a status, remove one
// or every matching), with the counts. Every change converges on the cores before the API answers;
// the toast says how many grants were made and taken away.
import {
  ActionIcon,
  Badge,
  Button,
  Card,
  Group,
  MultiSelect,
  Select,
  Stack,
  Table,
  Text,
  Title,
  Tooltip,
} from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { useState } from "react";
import { groupsApi, useGroup, useGroupMembers } from "../api/groups.ts";
import { keys } from "../api/keys.ts";
import { useChange, useRemoval } from "../api/mutation.ts";
import { useAllInbounds, useServers } from "../api/servers.ts";
import type { Group as GroupRecord } from "../api/types.ts";
import { useUserSearch } from "../api/users.ts";
import { useCan } from "../auth/me.ts";
import { useT } from "../i18n/i18n.tsx";
import { Link } from "../router.tsx";
import { ConfirmButton, useConfirm } from "../ui/Confirm.tsx";
import { ErrorAlert } from "../ui/errors.tsx";
import { TrashIcon } from "../ui/icons.tsx";
import { PageLoader } from "../ui/PageLoader.tsx";
import { DataTable, DetailHeader } from "../ui/Scaffold.tsx";
import { GroupNameModal } from "./GroupsPage.tsx";
import { USER_STATUSES, type UserStatus, UserStatusBadge } from "./users/lifecycle.tsx";

type Convergence = { inbounds: { granted: number; revoked: number }[] };

/** "Granted 3, revoked 0": what a change did on the cores, summed over the inbounds it touched. */
function useConverged() {
  const t = useT();
  return (result: Convergence) =>
    t("groups.converged", {
      granted: result.inbounds.reduce((sum, i) => sum + i.granted, 0),
      revoked: result.inbounds.reduce((sum, i) => sum + i.revoked, 0),
    });
}

function InboundsCard({ group, canEdit }: { group: GroupRecord; canEdit: boolean }) {
  const t = useT();
  const converged = useConverged();
  const [confirm, confirmModal] = useConfirm();
  const { choices, isLoading, error } = useAllInbounds();
  const servers = useServers();
  const [picked, setPicked] = useState<string[]>([]);
  const [serverId, setServerId] = useState<string | null>(null);
  const stale = [keys.groups.all, keys.allAccess];
  const add = useChange((ids: string[]) => groupsApi.addInbounds(group.id, ids), {
    invalidates: stale,
    done: converged,
    onSuccess: () => {
      setPicked([]);
      setServerId(null);
    },
  });
  const remove = useChange((inboundId: string) => groupsApi.removeInbound(group.id, inboundId), {
    invalidates: stale,
    done: converged,
  });
  const held = new Set(group.inbound_ids);
  const available = choices.filter((c) => !held.has(c.inbound.id));
  const ofServer = available.filter((c) => c.server.id === serverId).map((c) => c.inbound.id);
  const label = (id: string) => choices.find((c) => c.inbound.id === id);
  return (
    <Card withBorder data-testid="group-inbounds">
      <Stack gap="sm">
        <Title order={3}>{t("groups.inbounds")}</Title>
        {error !== undefined && <ErrorAlert error={error} />}
        {group.inbound_ids.length === 0 && <Text c="dimmed">{t("groups.noInbounds")}</Text>}
        {group.inbound_ids.map((id) => {
          const choice = label(id);
          return (
            <Group key={id} justify="space-between" wrap="nowrap" data-testid="group-inbound">
              {choice === undefined ? (
                <Text size="sm" ff="monospace">
                  {id}
                </Text>
              ) : (
                <Link to={`/servers/${choice.server.id}`} size="sm">
                  {choice.label}
                </Link>
              )}
              {canEdit && (
                <Tooltip label={t("groups.removeInbound")}>
                  <ActionIcon
                    variant="subtle"
                    color="red"
                    aria-label={t("groups.removeInbound")}
                    loading={remove.isPending && remove.variables === id}
                    onClick={() =>
                      confirm(
                        t("groups.removeInboundConfirm", {
                          inbound: choice?.label ?? id,
                          count: group.member_count,
                        }),
                        () => remove.mutate(id),
                      )
                    }
                  >
                    <TrashIcon />
                  </ActionIcon>
                </Tooltip>
              )}
            </Group>
          );
        })}
        {canEdit && (
          <>
            <Group align="flex-end" wrap="wrap">
              <MultiSelect
                style={{ flex: 1, minWidth: 220 }}
                label={t("groups.addInbounds")}
                placeholder={isLoading ? t("common.loading") : t("grants.pickInbound")}
                data={available.map((c) => ({ value: c.inbound.id, label: c.label }))}
                value={picked}
                onChange={setPicked}
                searchable
                clearable
                nothingFoundMessage={t("grants.noInbounds")}
                data-testid="group-inbound-picker"
              />
              <Button
                onClick={() => add.mutate(picked)}
                disabled={picked.length === 0}
                loading={add.isPending && add.variables === picked}
                data-testid="group-add-inbounds"
              >
                {t("groups.add")}
              </Button>
            </Group>
            <Group align="flex-end" wrap="wrap">
              <Select
                style={{ flex: 1, minWidth: 220 }}
                label={t("groups.addServer")}
                description={t("groups.addServerHint")}
                data={(servers.data ?? []).map((s) => ({ value: s.id, label: s.name }))}
                value={serverId}
                onChange={setServerId}
                searchable
                data-testid="group-server-picker"
              />
              <Button
                variant="light"
                onClick={() => add.mutate(ofServer)}
                disabled={ofServer.length === 0}
                loading={add.isPending && add.variables !== picked}
                data-testid="group-add-server"
              >
                {serverId === null ? t("groups.addAll") : t("groups.addAllN", { count: ofServer.length })}
              </Button>
            </Group>
          </>
        )}
      </Stack>
      {confirmModal}
    </Card>
  );
}

function MembersCard({ group, canEdit }: { group: GroupRecord; canEdit: boolean }) {
  const t = useT();
  const converged = useConverged();
  const [confirm, confirmModal] = useConfirm();
  // Cursor pages: the cursors of the pages before this one.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const after = cursors[cursors.length - 1];
  const members = useGroupMembers(group.id, after);
  const [q, setQ] = useState("");
  const [debounced] = useDebouncedValue(q.trim(), 250);
  const found = useUserSearch(canEdit ? debounced : "");
  const [statuses, setStatuses] = useState<UserStatus[]>([]);
  const stale = [keys.groups.all, keys.users.all];
  const changed = (result: { matched: number; changed: number } & Convergence) =>
    `${t("groups.membersChanged", { changed: result.changed, matched: result.matched })} ${converged(result)}`;
  const addOne = useChange((userId: string) => groupsApi.addMembers(group.id, { user_ids: [userId] }), {
    invalidates: stale,
    done: changed,
    onSuccess: () => setQ(""),
  });
  const removeOne = useChange((userId: string) => groupsApi.removeMember(group.id, userId), {
    invalidates: stale,
    done: t("groups.memberRemoved"),
  });
  const byFilter = useChange(
    ({ add }: { add: boolean }) => {
      const body = { filter: { status: statuses } };
      return add ? groupsApi.addMembers(group.id, body) : groupsApi.removeMembers(group.id, body);
    },
    { invalidates: stale, done: changed },
  );
  const page = members.data;
  const memberIds = new Set(page?.items.map((m) => m.id));
  return (
    <Card withBorder data-testid="group-members">
      <Stack gap="sm">
        <Title order={3}>{t("groups.members")}</Title>
        {canEdit && (
          <Select
            label={t("groups.addMember")}
            placeholder={t("groups.searchUsers")}
            searchable
            searchValue={q}
            onSearchChange={setQ}
            data={(found.data ?? [])
              .filter((u) => !memberIds.has(u.id))
              .map((u) => ({ value: u.id, label: u.name }))}
            value={null}
            onChange={(value) => value !== null && addOne.mutate(value)}
            disabled={addOne.isPending}
            nothingFoundMessage={debounced === "" ? undefined : t("users.noMatch", { q: debounced })}
            filter={({ options }) => options}
            data-testid="group-member-picker"
          />
        )}
        {members.error && <ErrorAlert error={members.error} />}
        {page !== undefined && page.items.length === 0 && <Text c="dimmed">{t("groups.noMembers")}</Text>}
        {page !== undefined && page.items.length > 0 && (
          <DataTable minWidth={320} columns={["users.name", "limits.status"]} actions={canEdit}>
            {page.items.map((member) => (
              <Table.Tr key={member.id} data-testid="group-member">
                <Table.Td>
                  <Link to={`/users/${member.id}`}>{member.name}</Link>
                </Table.Td>
                <Table.Td>
                  <UserStatusBadge status={member.status} />
                </Table.Td>
                {canEdit && (
                  <Table.Td>
                    <Tooltip label={t("groups.removeMember")}>
                      <ActionIcon
                        variant="subtle"
                        color="red"
                        aria-label={t("groups.removeMemberOf", { name: member.name })}
                        onClick={() =>
                          confirm(
                            t("groups.removeMemberConfirm", { name: member.name, group: group.name }),
                            () => removeOne.mutate(member.id),
                          )
                        }
                      >
                        <TrashIcon />
                      </ActionIcon>
                    </Tooltip>
                  </Table.Td>
                )}
              </Table.Tr>
            ))}
          </DataTable>
        )}
        {(cursors.length > 1 || page?.next_cursor) && (
          <Group justify="space-between">
            <Button
              variant="default"
              size="xs"
              disabled={cursors.length === 1}
              onClick={() => setCursors(cursors.slice(0, -1))}
            >
              {t("users.previousPage")}
            </Button>
            <Button
              variant="default"
              size="xs"
              disabled={!page?.next_cursor}
              onClick={() => page?.next_cursor && setCursors([...cursors, page.next_cursor])}
            >
              {t("users.nextPage")}
            </Button>
          </Group>
        )}
        {canEdit && (
          <Group align="flex-end" wrap="wrap">
            <MultiSelect
              style={{ flex: 1, minWidth: 200 }}
              label={t("groups.byStatus")}
              description={t("groups.byStatusHint")}
              data={USER_STATUSES.map((s) => ({ value: s, label: t(`userStatus.${s}`) }))}
              value={statuses}
              onChange={(value) => setStatuses(value as UserStatus[])}
              data-testid="group-member-filter"
            />
            <Button
              variant="light"
              disabled={statuses.length === 0}
              loading={byFilter.isPending && byFilter.variables?.add === true}
              onClick={() => byFilter.mutate({ add: true })}
              data-testid="group-add-matching"
            >
              {t("groups.addMatching")}
            </Button>
            <Button
              variant="light"
              color="red"
              disabled={statuses.length === 0}
              loading={byFilter.isPending && byFilter.variables?.add === false}
              onClick={() =>
                confirm(t("groups.removeMatchingConfirm", { group: group.name }), () =>
                  byFilter.mutate({ add: false }),
                )
              }
              data-testid="group-remove-matching"
            >
              {t("groups.removeMatching")}
            </Button>
          </Group>
        )}
      </Stack>
      {confirmModal}
    </Card>
  );
}

export function GroupPage({ id }: { id: string }) {
  const t = useT();
  const can = useCan();
  const group = useGroup(id);
  const [isRenaming, setRenaming] = useState(false);
  const remove = useRemoval(() => groupsApi.remove(id), keys.groups, id, t("groups.deleted"));
  if (group.isLoading) return <PageLoader />;
  if (group.error || group.data === undefined) return <ErrorAlert error={group.error} />;
  const data = group.data;
  const canEdit = can("access.write");
  return (
    <Stack>
      <DetailHeader
        back={{ to: "/groups", label: t("nav.groups") }}
        title={data.name}
        badge={
          <Badge variant="light" data-testid="group-counts">
            {t("groups.counts", { inbounds: data.inbound_ids.length, members: data.member_count })}
          </Badge>
        }
      >
        {canEdit && (
          <Button variant="default" onClick={() => setRenaming(true)}>
            {t("groups.rename")}
          </Button>
        )}
        {canEdit && (
          <ConfirmButton
            variant="light"
            change={remove}
            question={t("groups.deleteConfirm", { name: data.name, count: data.member_count })}
          >
            {t("common.delete")}
          </ConfirmButton>
        )}
      </DetailHeader>
      <InboundsCard group={data} canEdit={canEdit} />
      {can("users.read") && <MembersCard group={data} canEdit={canEdit} />}
      {isRenaming && <GroupNameModal id={data.id} name={data.name} onClose={() => setRenaming(false)} />}
    </Stack>
  );
}
