// Templates: what each builds (protocol, transport, security, cores), opened in the editor.
import { Anchor, Badge, Button, Group, Skeleton, Stack, Table, Text, Title } from "@mantine/core";
import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../api/client.ts";
import { useCan } from "../auth/me.ts";
import { useT } from "../i18n/i18n.tsx";
import { followLink, href, navigate } from "../router.tsx";
import { ErrorAlert } from "../ui/errors.tsx";

export function TemplatesPage() {
  const t = useT();
  const can = useCan();
  const templates = useQuery({ queryKey: ["templates"], queryFn: () => unwrap(api.GET("/api/templates")) });
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>{t("nav.templates")}</Title>
        {can("templates.write") && (
          <Button onClick={() => navigate("/templates/new")}>{t("templates.new")}</Button>
        )}
      </Group>
      {templates.error && <ErrorAlert error={templates.error} />}
      {templates.isLoading && <Skeleton h={160} />}
      {templates.data?.length === 0 && (
        <Text c="dimmed" ta="center" py="lg">
          {t("templates.emptyHint")}
        </Text>
      )}
      {(templates.data?.length ?? 0) > 0 && (
        <Table.ScrollContainer minWidth={560}>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t("templates.name")}</Table.Th>
                <Table.Th>{t("templates.builds")}</Table.Th>
                <Table.Th>{t("templates.cores")}</Table.Th>
                <Table.Th>{t("templates.variables")}</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {templates.data?.map((template) => (
                <Table.Tr key={template.id}>
                  <Table.Td>
                    <Anchor
                      href={href(`/templates/${template.id}`)}
                      onClick={(e) => followLink(e, `/templates/${template.id}`)}
                    >
                      {template.name}
                    </Anchor>
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
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Stack>
  );
}
