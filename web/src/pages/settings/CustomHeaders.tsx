// The operator's own headers sent with every /sub answer (issue 48): a name and a value template per
// row, added and removed in place. Their order does not matter to apps, so there is no reordering.
import { ActionIcon, Button, Group, Stack, Text, TextInput } from "@mantine/core";
import type { UseFormReturnType } from "@mantine/form";
import { useT } from "../../i18n/i18n.tsx";
import { ruleKey, type Values } from "./values.ts";

/** The API's limit (subscription-settings.schemas.ts). */
const MAX_HEADERS = 16;

function CrossIcon() {
  return (
    <svg
      width="16"
      height="16"
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      strokeWidth="2"
      aria-hidden
    >
      <path d="M18 6 6 18M6 6l12 12" />
    </svg>
  );
}

export function CustomHeaders({ form, readOnly }: { form: UseFormReturnType<Values>; readOnly: boolean }) {
  const t = useT();
  const headers = form.values.custom_headers;
  return (
    <Stack gap="xs">
      <div>
        <Text size="sm" fw={500}>
          {t("subSettings.customHeaders")}
        </Text>
        <Text size="xs" c="dimmed">
          {t("subSettings.customHeadersHint")}
        </Text>
      </div>
      {headers.length === 0 && (
        <Text size="sm" c="dimmed" data-testid="custom-headers-empty">
          {t("subSettings.customHeadersEmpty")}
        </Text>
      )}
      {headers.map((header, i) => (
        <Group key={header.key} gap="xs" align="flex-start" wrap="wrap" data-testid="custom-header">
          <TextInput
            aria-label={t("subSettings.headerName", { n: i + 1 })}
            placeholder="X-Plan"
            readOnly={readOnly}
            spellCheck={false}
            ff="monospace"
            maxLength={64}
            style={{ flex: "1 1 160px" }}
            {...form.getInputProps(`custom_headers.${i}.name`)}
          />
          <TextInput
            aria-label={t("subSettings.headerValue", { n: i + 1 })}
            placeholder="{DATA_LEFT} · {DAYS_LEFT}"
            readOnly={readOnly}
            spellCheck={false}
            maxLength={1000}
            style={{ flex: "3 1 260px" }}
            {...form.getInputProps(`custom_headers.${i}.value`)}
          />
          {!readOnly && (
            <ActionIcon
              variant="subtle"
              color="red"
              mt={4}
              aria-label={t("subSettings.removeHeader", { n: i + 1 })}
              onClick={() => form.removeListItem("custom_headers", i)}
            >
              <CrossIcon />
            </ActionIcon>
          )}
        </Group>
      ))}
      {!readOnly && (
        <Group>
          <Button
            variant="light"
            disabled={headers.length >= MAX_HEADERS}
            onClick={() => form.insertListItem("custom_headers", { key: ruleKey(), name: "", value: "" })}
          >
            {t("subSettings.addHeader")}
          </Button>
        </Group>
      )}
    </Stack>
  );
}
