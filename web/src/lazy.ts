/**
 * A module the first screen does not need, fetched when first used (its own chunk, `import()`): `loaded()` is the
 * module once it came, else undefined, the fetch begun; `whenLoaded(use)` runs `use` once it has come. A failed
 * fetch (offline) is tried again on the next use.
 */
export function lazyModule<T>(load: () => Promise<T>) {
  let module: T | undefined;
  let loading: Promise<T> | undefined;
  const start = () =>
    (loading ??= load().then(
      (m) => (module = m),
      (error: unknown) => {
        loading = undefined;
        throw error;
      },
    ));
  return {
    loaded(): T | undefined {
      if (!module) start().catch(() => {});
      return module;
    },
    whenLoaded(use: (module: T) => void): void {
      start().then(use, () => {});
    },
  };
}
