/**
 * xterm.js writes its computed styles (cell size, theme colours, scrollbar) into <style> elements, which the page's
 * Content-Security-Policy (style-src 'self') refuses — and reports. While xterm builds its elements, a <style> it
 * asks for is an inert element instead (xterm only sets its text and removes it), and the text of those elements is
 * applied as constructable stylesheets: CSSOM, which the policy allows. Nothing inline is ever offered to it.
 */
const INERT = "xterm-style";

/** Runs `build` with <style> elements made inert; returns what releases the stylesheets taken from them. */
export function buildWithAdoptedStyles(root: HTMLElement, build: () => void): () => void {
  const create = document.createElement;
  document.createElement = function (this: Document, tag: string, options?: ElementCreationOptions) {
    return create.call(this, tag.toLowerCase() === "style" ? INERT : tag, options);
  } as typeof document.createElement;
  try {
    build();
  } finally {
    document.createElement = create;
  }

  const sheets = new Map<Element, CSSStyleSheet>();
  let adopted = new Set<CSSStyleSheet>();
  const publish = () => {
    const next = new Set(sheets.values());
    document.adoptedStyleSheets = [...document.adoptedStyleSheets.filter((s) => !adopted.has(s)), ...next];
    adopted = next;
  };
  const sync = () => {
    const present = new Set(root.querySelectorAll(INERT));
    for (const el of sheets.keys()) if (!present.has(el)) sheets.delete(el);
    for (const el of present) {
      let sheet = sheets.get(el);
      if (!sheet) {
        sheet = new CSSStyleSheet();
        sheets.set(el, sheet);
      }
      sheet.replaceSync(el.textContent ?? "");
    }
    publish();
  };
  const observer = new MutationObserver(sync);
  observer.observe(root, { subtree: true, childList: true, characterData: true });
  sync();
  return () => {
    observer.disconnect();
    sheets.clear();
    publish();
  };
}
