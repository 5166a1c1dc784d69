// Groups (issue 49): named sets of inbounds across servers that users belong to. The list with each
// group's counts of inbounds and members, and a new group by name; each opens on its own page
// (inbounds, members, rename, delete).
import { Button, Modal, Stack, Table, TextInput } from "@mantine/core";
import { useForm } from "@mantine/form";
import { useState } from "react";
import { groupsApi, useGroups } from "../api/groups.ts";
import { keys } from "../api/keys.ts";
import { useChange } from "../api/mutation.ts";
import { useCan } from "../auth/me.ts";
import { useT } from "../i18n/i18n.tsx";
import { Link, navigate } from "../router.tsx";
import { applyFieldErrors } from "../ui/errors.tsx";
import { DataTable, FormButtons, ListState, PageHeader } from "../ui/Scaffold.tsx";

/** A group's name: new (no id) or renamed. */
export function GroupNameModal({
  id,
  name = "",
  onClose,
}: {
  id?: string;
  name?: string;
  onClose: () => void;
}) {
  const t = useT();
  const form = useForm({ initialValues: { name } });
  const save = useChange(
    (values: { name: string }) =>
      id === undefined ? groupsApi.create(values) : groupsApi.update(id, values).then((r) => r.group),
    {
      invalidates: [keys.groups.all],
      done: id === undefined ? t("groups.created") : t("common.saved"),
      onSuccess: (group) => {
        onClose();
        if (id === undefined) navigate(`/groups/${group.id}`);
      },
      onError: (e) => applyFieldErrors(form, e),
    },
  );
  return (
    <Modal opened onClose={onClose} title={id === undefined ? t("groups.new") : t("groups.rename")}>
      <form onSubmit={form.onSubmit((values) => save.mutate(values))} data-testid="group-form">
        <Stack>
          <TextInput
            label={t("groups.name")}
            required
            maxLength={64}
            data-autofocus
            {...form.getInputProps("name")}
          />
          <FormButtons
            onCancel={onClose}
            isSaving={save.isPending}
            label={id === undefined ? t("common.create") : t("common.save")}
          />
        </Stack>
      </form>
    </Modal>
  );
}

export function GroupsPage() {
  const t = useT();
  const can = useCan();
  const groups = useGroups();
  const [isCreating, setCreating] = useState(false);
  return (
    <Stack>
      <PageHeader title={t("nav.groups")} hint={t("groups.hint")}>
        {can("access.write") && <Button onClick={() => setCreating(true)}>{t("groups.new")}</Button>}
      </PageHeader>
      <ListState query={groups} empty={t("groups.empty")}>
        {(list) => (
          <DataTable minWidth={360} columns={["groups.name", "groups.inbounds", "groups.members"]}>
            {list.map((group) => (
              <Table.Tr key={group.id} data-testid="group-row">
                <Table.Td>
                  <Link to={`/groups/${group.id}`}>{group.name}</Link>
                </Table.Td>
                <Table.Td data-testid="group-inbound-count">{group.inbound_ids.length}</Table.Td>
                <Table.Td data-testid="group-member-count">{group.member_count}</Table.Td>
              </Table.Tr>
            ))}
          </DataTable>
        )}
      </ListState>
      {isCreating && <GroupNameModal onClose={() => setCreating(false)} />}
    </Stack>
  );
}
