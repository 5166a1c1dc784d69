import { ActionIcon, CopyButton, Tooltip } from "@mantine/core";
import { useT } from "../i18n/i18n.tsx";
import { CheckIcon, CopyIcon } from "./icons.tsx";

export function Copy({ value, label }: { value: string; label: string }) {
  const t = useT();
  return (
    <CopyButton value={value} timeout={1500}>
      {({ copied, copy }) => (
        <Tooltip label={copied ? t("common.copied") : label} withArrow>
          <ActionIcon variant="subtle" color={copied ? "teal" : "gray"} onClick={copy} aria-label={label}>
            {copied ? <CheckIcon /> : <CopyIcon />}
          </ActionIcon>
        </Tooltip>
      )}
    </CopyButton>
  );
}
