// Copy to the clipboard. The Clipboard API exists only in secure contexts (https, localhost); an
// operator on http://<server ip>:8080 gets the older execCommand path instead of a silent no-op.
import { ActionIcon, Tooltip } from "@mantine/core";
import { useState } from "react";
import { useT } from "../i18n/i18n.tsx";
import { notifyError } from "./errors.tsx";
import { CheckIcon, CopyIcon } from "./icons.tsx";

async function copyText(text: string): Promise<void> {
  if (window.isSecureContext && navigator.clipboard !== undefined) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.append(area);
  area.select();
  const isCopied = document.execCommand("copy");
  area.remove();
  if (!isCopied) throw new Error("the browser refused to copy; select the text and copy it by hand");
}

export function Copy({ value, label }: { value: string; label: string }) {
  const t = useT();
  const [isCopied, setCopied] = useState(false);
  const copy = () =>
    copyText(value).then(() => {
      setCopied(true);
      setTimeout(() => setCopied(false), 1500);
    }, notifyError);
  return (
    <Tooltip label={isCopied ? t("common.copied") : label} withArrow>
      <ActionIcon variant="subtle" color={isCopied ? "teal" : "gray"} onClick={copy} aria-label={label}>
        {isCopied ? <CheckIcon /> : <CopyIcon />}
      </ActionIcon>
    </Tooltip>
  );
}
