// Entry: providers (theme with the CSP nonce, direction, language, queries, notifications), then the app.
import "@mantine/core/styles.css";
import "@mantine/notifications/styles.css";
import { DirectionProvider, localStorageColorSchemeManager, MantineProvider } from "@mantine/core";
import { Notifications } from "@mantine/notifications";
import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { setNonce } from "get-nonce";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App.tsx";
import { ApiError } from "./api/client.ts";
import { keys } from "./api/keys.ts";
import { I18nProvider } from "./i18n/i18n.tsx";
import { cssVariablesResolver, theme } from "./theme.ts";

// The service writes a fresh nonce into this meta tag with every index.html; the CSP allows
// exactly that one for Mantine's <style> element.
const nonce = document.querySelector<HTMLMetaElement>('meta[name="portcullis-style-nonce"]')?.content ?? "";
// Modals lock scrolling with a <style> element of their own (react-remove-scroll), nonced here.
setNonce(nonce);

// A 403 means the role changed under this page (an owner changed it, or a key was narrowed): ask
// /api/auth/me again so the actions on screen follow. The 403's detail is shown where it happened.
const onForbidden = (error: unknown) => {
  if (error instanceof ApiError && error.status === 403)
    void queryClient.invalidateQueries({ queryKey: keys.me() });
};
const queryClient: QueryClient = new QueryClient({
  queryCache: new QueryCache({ onError: onForbidden }),
  mutationCache: new MutationCache({ onError: onForbidden }),
  defaultOptions: {
    queries: {
      staleTime: 5_000,
      refetchOnWindowFocus: false,
      // A 4xx will not get better by asking again; a network blip might.
      retry: (count, error) =>
        count < 2 && !(error instanceof ApiError && error.status >= 400 && error.status < 500),
    },
  },
});

const root = document.getElementById("root");
if (root === null) throw new Error("#root missing");
createRoot(root).render(
  <StrictMode>
    <DirectionProvider detectDirection>
      <MantineProvider
        theme={theme}
        cssVariablesResolver={cssVariablesResolver}
        defaultColorScheme="auto"
        colorSchemeManager={localStorageColorSchemeManager({ key: "portcullis.color-scheme" })}
        getStyleNonce={() => nonce}
      >
        {/* Bottom corner: a toast never covers the header's controls (menu, language, sign out). */}
        <Notifications position="bottom-right" />
        <QueryClientProvider client={queryClient}>
          <I18nProvider>
            <App />
          </I18nProvider>
        </QueryClientProvider>
      </MantineProvider>
    </DirectionProvider>
  </StrictMode>,
);
