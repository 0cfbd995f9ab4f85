/**
 * A D1 binding that counts what it executes: each statement run (first, run, all, raw) or sent in a batch counts
 * once under "<where> | <sql>". Everything else passes through to the real binding.
 */
export type D1Tally = Map<string, number>;

const EXECUTE = new Set<PropertyKey>(["first", "run", "all", "raw"]);

/** Each proxy handed out, with the real statement behind it (a batch must be given the binding's own objects). */
const statements = new WeakMap<object, { inner: D1PreparedStatement; sql: string }>();

/** A property of the real object, its methods bound to it (the binding's methods need their own `this`). */
const passThrough = (target: object, prop: PropertyKey): unknown => {
  const value: unknown = Reflect.get(target, prop, target);
  return typeof value === "function" ? value.bind(target) : value;
};

/** `onQuery` is told of each statement as it is sent (a D1 query is a subrequest: an output of the object). */
export function countingD1(db: D1Database, tally: D1Tally, where: string, onQuery: () => void = () => {}): D1Database {
  const count = (sql: string) => {
    const key = `${where} | ${sql.replace(/\s+/g, " ").trim()}`;
    tally.set(key, (tally.get(key) ?? 0) + 1);
    onQuery();
  };
  const wrap = (inner: D1PreparedStatement, sql: string): D1PreparedStatement => {
    const proxy = new Proxy(inner, {
      get(target, prop) {
        if (prop === "bind") return (...values: unknown[]) => wrap(target.bind(...values), sql);
        if (EXECUTE.has(prop)) {
          const method = Reflect.get(target, prop, target) as (...args: unknown[]) => unknown;
          return (...args: unknown[]) => {
            count(sql);
            return method.apply(target, args);
          };
        }
        return passThrough(target, prop);
      },
    });
    statements.set(proxy, { inner, sql });
    return proxy;
  };
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") return (sql: string) => wrap(target.prepare(sql), sql);
      if (prop === "batch") {
        return (batch: D1PreparedStatement[]) =>
          target.batch(
            batch.map((statement) => {
              const known = statements.get(statement);
              count(known ? known.sql : "(unknown statement in a batch)");
              return known ? known.inner : statement;
            }),
          );
      }
      return passThrough(target, prop);
    },
  });
}
