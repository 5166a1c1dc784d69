// Destructive actions ask first: a modal naming what goes, confirmed with a red button.
import { Button, type ButtonProps, Group, Modal, Text } from "@mantine/core";
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

/**
 * A red button that asks `question` first, then runs `change` (a mutation taking no variables: the
 * button spins while it runs) or `onConfirm`.
 */
export function ConfirmButton({
  question,
  change,
  onConfirm,
  children,
  ...props
}: {
  question: ReactNode;
  change?: { mutate: () => void; isPending: boolean };
  onConfirm?: () => unknown;
  children: ReactNode;
} & Omit<ButtonProps, "color" | "loading">) {
  const [confirm, modal] = useConfirm();
  const run = () => (change !== undefined ? change.mutate() : onConfirm?.());
  return (
    <>
      <Button color="red" {...props} loading={change?.isPending} onClick={() => confirm(question, run)}>
        {children}
      </Button>
      {modal}
    </>
  );
}
