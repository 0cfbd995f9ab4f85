/**
 * Building DOM elements directly, for the views kept outside Preact: the transcript, which grows by the frame while a
 * turn streams and is cheaper appended to than diffed, and the composer's pickers.
 */
type Child = Node | string | number | null | undefined | false;
type Attr = string | number | boolean | ((event: Event) => void) | undefined;

/** A new element: its attributes (an `on…` function is a listener) and its children. */
export function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, Attr> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === "function") el.addEventListener(name.replace(/^on/, ""), value);
    else if (value === true) el.setAttribute(name, "");
    else el.setAttribute(name, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === "number" ? String(child) : child);
  }
  return el;
}

export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  for (const child of children)
    if (child !== null && child !== undefined && child !== false)
      parent.append(typeof child === "number" ? String(child) : child);
}
