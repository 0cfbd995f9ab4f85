/**
 * One value per object instance, made at its first use and kept by something only that instance holds (its state,
 * storage or SqlStorage): a new instance after an eviction starts with a new one.
 */
export function perObject<K extends object, V>(make: (key: K) => V): (key: K) => V {
  const made = new WeakMap<K, V>();
  return (key) => {
    let value = made.get(key);
    if (value === undefined) {
      value = make(key);
      made.set(key, value);
    }
    return value;
  };
}
