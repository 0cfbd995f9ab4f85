/**
 * The icons of the app's icon buttons, drawn inline (no icon font, no emoji a phone may lack); each is
 * decorative — the button carries the name.
 */
const PATHS = {
  attach:
    "M16.5 6.5v10.2a4.5 4.5 0 0 1-9 0V5.8a3 3 0 0 1 6 0v10a1.5 1.5 0 0 1-3 0V6.5H9v9.3a3 3 0 0 0 6 0v-10a4.5 4.5 0 0 0-9 0v10.9a6 6 0 0 0 12 0V6.5z",
  send: "M12 4 4.9 11.1l1.4 1.4L11 7.8V20h2V7.8l4.7 4.7 1.4-1.4z",
  steer: "M14 5l-1.4 1.4 3.6 3.6H9a5 5 0 0 0-5 5v4h2v-4a3 3 0 0 1 3-3h7.2l-3.6 3.6L14 17l6-6z",
  stop: "M7 7h10v10H7z",
  mic: "M12 15a3 3 0 0 0 3-3V6a3 3 0 0 0-6 0v6a3 3 0 0 0 3 3zm5-3a5 5 0 0 1-10 0H5a7 7 0 0 0 6 6.9V21h2v-2.1a7 7 0 0 0 6-6.9z",
  menu: "M6 10.5a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zm6 0a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zm6 0a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3z",
  list: "M4 6h16v2H4zm0 5h16v2H4zm0 5h16v2H4z",
} as const;

export function Icon({ name }: { name: keyof typeof PATHS }) {
  return (
    <svg class="glyph" viewBox="0 0 24 24" width="22" height="22" aria-hidden="true" focusable="false">
      <path d={PATHS[name]} fill="currentColor" />
    </svg>
  );
}

/**
 * The app's mark (web/public/icons/icon.svg), drawn inline in the header: as an image it would be a request and an
 * SVG document of its own to lay out, on a slow phone about 100 ms of the first screen's main thread.
 */
export function BrandMark() {
  return (
    <svg viewBox="0 0 64 64" width="24" height="24" aria-hidden="true" focusable="false">
      <rect width="64" height="64" rx="14" fill="#2f6f4f" />
      <path d="M32 11c11 6 17 15 17 23 0 10-7.6 18-17 18S15 44 15 34c0-8 6-17 17-23z" fill="#dff3e6" />
      <path d="M32 19v30M32 30l-8-6M32 38l9-7" stroke="#2f6f4f" stroke-width="3" stroke-linecap="round" fill="none" />
    </svg>
  );
}
