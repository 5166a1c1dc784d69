// Templates: what each builds (protocol, transport, security, cores), opened in the editor.

import { Badge, Button, Group, Stack, Table, Text } from "@mantine/core";
import { useTemplates } from "../api/fleet.ts";
import { useCan } from "../auth/me.ts";
import { useT } from "../i18n/i18n.tsx";
import { Link, navigate } from "../router.tsx";
import { DataTable, ListState, PageHeader } from "../ui/Scaffold.tsx";
import { StarterOffer } from "./templates/StarterOffer.tsx";

export function TemplatesPage() {
  const t = useT();
  const can = useCan();
  const templates = useTemplates();
  return (
    <Stack>
      <PageHeader title={t("nav.templates")}>
        {can("templates.write") && (
          <Button onClick={() => navigate("/templates/new")}>{t("templates.new")}</Button>
        )}
      </PageHeader>
      <ListState query={templates} empty={<StarterOffer />} skeleton={160}>
        {(list) => (
          <DataTable
            minWidth={560}
            striped
            highlightOnHover
            columns={["templates.name", "templates.builds", "templates.cores", "templates.variables"]}
          >
            {list.map((template) => (
              <Table.Tr key={template.id}>
                <Table.Td>
                  <Link to={`/templates/${template.id}`}>{template.name}</Link>
                  <Text size="xs" c="dimmed" lineClamp={1}>
                    {template.description}
                  </Text>
                </Table.Td>
                <Table.Td>
                  {template.protocol} / {template.network} / {template.security}
                </Table.Td>
                <Table.Td>
                  <Group gap={4}>
                    {template.supported_cores.map((core) => (
                      <Badge key={core} variant="light" size="sm">
                        {core}
                      </Badge>
                    ))}
                  </Group>
                </Table.Td>
                <Table.Td>{template.variables.map((v) => v.name).join(", ") || "—"}</Table.Td>
              </Table.Tr>
            ))}
          </DataTable>
        )}
      </ListState>
    </Stack>
  );
}
