// Destructive actions ask first: a modal naming what goes, confirmed with a red button.
import { Button, Group, Modal, Text } from "@mantine/core";
import { type ReactNode, useState } from "react";
import { useT } from "../i18n/i18n.tsx";

export function useConfirm(): [(message: ReactNode, action: () => unknown) => void, ReactNode] {
  const t = useT();
  const [pending, setPending] = useState<{ message: ReactNode; action: () => unknown }>();
  const modal = (
    <Modal
      opened={pending !== undefined}
      onClose={() => setPending(undefined)}
      title={t("confirm.title")}
      centered
    >
      <Text size="sm">{pending?.message}</Text>
      <Group justify="flex-end" mt="md">
        <Button variant="default" onClick={() => setPending(undefined)}>
          {t("common.cancel")}
        </Button>
        <Button
          color="red"
          data-autofocus
          onClick={() => {
            pending?.action();
            setPending(undefined);
          }}
        >
          {t("confirm.yes")}
        </Button>
      </Group>
    </Modal>
  );
  return [(message, action) => setPending({ message, action }), modal];
}
