import { Badge, type CSSVariablesResolver, createTheme, Modal, Notification } from "@mantine/core";

export const theme = createTheme({
  primaryColor: "blue",
  // Shade 8: white text on the primary colour meets WCAG AA contrast (shade 6 does not).
  primaryShade: { light: 8, dark: 8 },
  defaultRadius: "md",
  fontFamily: "system-ui, -apple-system, 'Segoe UI', Roboto, 'Noto Sans', 'Vazirmatn', Tahoma, sans-serif",
  fontFamilyMonospace: "ui-monospace, 'SFMono-Regular', Menlo, Consolas, 'Liberation Mono', monospace",
  components: {
    // A badge is a word or two: in a table's narrow column it keeps them instead of "DELIVER…".
    Badge: Badge.extend({ styles: { root: { flexShrink: 0, minWidth: "max-content" } } }),
    // The close icon has no text of its own; screen readers need its name.
    Modal: Modal.extend({ defaultProps: { closeButtonProps: { "aria-label": "Close" } } }),
    // The same for a notification's; and its text (an API error's detail) at full contrast, not
    // Mantine's grey under a title (3.3:1 in the light scheme).
    Notification: Notification.extend({
      defaultProps: { closeButtonProps: { "aria-label": "Close" } },
      styles: { description: { color: "var(--mantine-color-text)" } },
    }),
  },
});

// Mantine's defaults for "dimmed" text and for light badges and alerts (shade 9 text on a shade 1
// background) fall just below WCAG AA contrast; axe finds them (web/e2e/pages.spec.ts). In the light
// scheme: shade 0 backgrounds, darker dimmed text, and browns for yellow and orange (no shade of
// theirs is dark enough); in the dark one: lighter dimmed text. Field errors likewise, both schemes.
const LIGHT_TEXT: Record<string, string> = {
  "--mantine-color-dimmed": "var(--mantine-color-gray-7)",
  "--mantine-color-yellow-light-color": "#7a4a00",
  "--mantine-color-orange-light-color": "#8f3500",
  // A field's error text (and the input's text while it is in error): red 6 is 3.3:1 on white.
  "--mantine-color-error": "var(--mantine-color-red-9)",
};
for (const color of ["teal", "red", "blue", "gray", "green", "cyan", "grape", "yellow", "orange"]) {
  LIGHT_TEXT[`--mantine-color-${color}-light`] = `var(--mantine-color-${color}-0)`;
  if (color !== "yellow" && color !== "orange") {
    LIGHT_TEXT[`--mantine-color-${color}-light-color`] = `var(--mantine-color-${color}-9)`;
  }
  // A light or subtle control's hover: Mantine's is a shade-2-like tint, on which shade 9 text is
  // 4.0:1 (blue). Shade 1 keeps ≥ 4.5:1 for these colours (blue 4.9, red 4.5, cyan 4.8, grape 5.6);
  // teal and green (4.3 and 3.8 on shade 1) keep their shade 0 background on hover.
  // Yellow's and orange's browns are 6.6–6.7:1 on their shade 1.
  const hoverShade = color === "teal" || color === "green" ? 0 : 1;
  LIGHT_TEXT[`--mantine-color-${color}-light-hover`] = `var(--mantine-color-${color}-${hoverShade})`;
}

export const cssVariablesResolver: CSSVariablesResolver = () => ({
  variables: {},
  light: LIGHT_TEXT,
  dark: {
    "--mantine-color-dimmed": "var(--mantine-color-dark-1)",
    // Mantine's red 8 is 3.4:1 on the dark body; red 5 is 5.6:1.
    "--mantine-color-error": "var(--mantine-color-red-5)",
  },
});
