import { Center, Loader } from "@mantine/core";

export function PageLoader() {
  return (
    <Center py="xl" aria-busy="true">
      <Loader size="md" aria-label="Loading" />
    </Center>
  );
}
