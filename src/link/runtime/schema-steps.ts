/**
 * The object's SQLite schema, as numbered steps per feature. A feature lists its steps (`migrations`); when the
 * object starts, every step it has not applied yet is run once, in one transaction with the rows that record them in
 * the object's own table `schema_steps` (feature, step). A step that fails leaves nothing behind and the object
 * does not start (a half-changed schema would lose rows later, which is worse than refusing now).
 *
 * Rules for a step: numbered 1, 2, 3, … within its feature, in order; once landed it is never edited, renumbered or
 * removed, and a feature is never renamed (the name is the key its steps are recorded under) — a change is a new
 * step. Step 1 of the features that existed before steps were numbered uses `CREATE … IF NOT EXISTS`, so an object
 * written by that earlier schema adopts its tables, rows and all; later steps say exactly what they change.
 *
 * Features run their steps in the registry's order (registry.ts), so a step may rely on the tables of the features
 * its feature declares it runs after.
 *
 * A fresh object (no tables of its own yet) makes them at its first entry point but a device's link, which makes them
 * once its 101 has gone (startSchema); it makes a feature's tables from its `fresh` statements, when it has them,
 * and records all its steps as applied: steps that rebuild, rename or drop tables are the dearest statements a
 * device's first link runs, and on an empty object they only undo each other. A test holds every feature's `fresh`
 * equal to what its steps make.
 *
 * A feature made on demand (`onDemand`) has no tables until its first write makes them (tables-on-demand.ts); a start
 * runs the pending steps only of the ones made, and counts as made one with a table of its own name already there
 * (made before it was on demand), whose step 1 (`IF NOT EXISTS`) adopts it.
 */

/**
 * One numbered change of a feature's tables: SQL statements run in order, or a function for what SQL cannot say
 * (given the key-value store too, in the same transaction, for what moves between the two).
 */
export interface SchemaStep {
  readonly step: number;
  readonly run: readonly string[] | ((sql: SqlStorage, kv: SyncKvStorage) => void);
}

/** What the migration runner needs of a feature. */
export interface Migrating {
  /** Unique, and never renamed: its schema steps are recorded under it. */
  readonly name: string;
  /** The feature's own tables, as numbered steps applied once each. */
  readonly migrations?: readonly SchemaStep[];
  /** The tables as the last step leaves them, made at once on a fresh object in place of the steps. */
  readonly fresh?: readonly string[];
  /**
   * Its tables are made by the feature's first write instead of at the object's start: most links never open a card,
   * a terminal or a turn, and every table a start makes is a statement of every device's first link. Its steps are
   * statements (or it has `fresh`), since they run inside whichever event writes first.
   */
  readonly onDemand?: boolean;
}

/**
 * A `sqlite_master` condition: the entry is the object's own, not SQLite's (`sqlite_sequence`) nor the runtime's
 * (`_cf_…`, and the table wrangler dev's object wrapper makes as an object starts).
 */
export const OWN_NAME = `name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' AND name != '__miniflare_do_name'`;
/** The object's own tables. */
export const OWN_TABLES = `SELECT name FROM sqlite_master WHERE type='table' AND ${OWN_NAME}`;
const STEPS_TABLE =
  "CREATE TABLE schema_steps (" +
  "feature TEXT NOT NULL,step INTEGER NOT NULL,applied_at INTEGER NOT NULL,PRIMARY KEY (feature,step))";

/** Records the steps applied, given as a JSON array of [feature, step] pairs. */
const RECORD_STEPS =
  "INSERT INTO schema_steps (feature,step,applied_at) SELECT value ->> 0,value ->> 1,?1 FROM json_each(?2)";

/**
 * Refuses steps that are not numbered 1, 2, 3, … in order (two changes under one number, or one left out), and a
 * feature made on demand that could not be made by statements alone.
 */
export function checkSteps(feature: Migrating): void {
  (feature.migrations ?? []).forEach(({ step }, index) => {
    if (step !== index + 1) {
      throw new Error(
        `${feature.name}'s schema steps must be numbered 1, 2, 3, … in order; step ${index + 1} is numbered ${step}`,
      );
    }
  });
  if (feature.onDemand) onDemandStatements(feature);
}

/** The statements that make a feature made on demand: its last shape, or its steps' statements in order. */
function onDemandStatements(feature: Migrating): readonly string[] {
  return (
    feature.fresh ??
    (feature.migrations ?? []).flatMap(({ step, run }) => {
      if (typeof run === "function") {
        throw new Error(`${feature.name} is made on demand, so its step ${step} must be statements (or give fresh)`);
      }
      return run;
    })
  );
}

/** Records the given steps of a feature as applied. */
const recordSteps = (sql: SqlStorage, steps: readonly (readonly [string, number])[]) =>
  sql.exec(RECORD_STEPS, Date.now(), JSON.stringify(steps));

/**
 * Makes the tables of a feature made on demand, all its steps recorded as applied, in the caller's transaction (the
 * write that needs them): the feature has no tables yet, so its last shape is all there is to make.
 */
export function makeOnDemand(sql: SqlStorage, feature: Migrating): void {
  const statements = onDemandStatements(feature);
  if (statements.length > 0) sql.exec(statements.join(";\n"));
  recordSteps(
    sql,
    (feature.migrations ?? []).map(({ step }) => [feature.name, step] as const),
  );
}

/** What a start did to the schema: the steps it applied (`feature/step`), and whether the object had no tables. */
export interface SchemaStart {
  applied: string[];
  /** Every table was made by this start, so every one is empty. */
  fresh: boolean;
  /** The features whose tables the object has now: all but those made on demand that nothing has made yet. */
  made: string[];
}

/** The object's own tables, by name. */
const ownTables = (sql: SqlStorage) => sql.exec<{ name: string }>(OWN_TABLES).toArray();

/**
 * Applies every step not applied yet, feature by feature in the given order. All the steps one start applies run in
 * one transaction (a fresh object makes every table at once: one savepoint, not one a step), so a step that fails
 * leaves nothing of that start behind. An object whose steps are all applied only reads: `CREATE TABLE IF NOT
 * EXISTS` is a write even when the table exists, and would hold the first output of every wake behind a commit.
 */
export function applySteps(
  storage: DurableObjectStorage,
  features: readonly Migrating[],
  tables = ownTables(storage.sql),
): SchemaStart {
  const { sql } = storage;
  const fresh = tables.length === 0;
  const recorded = tables.some(({ name }) => name === "schema_steps");
  const steps = recorded
    ? sql.exec<{ feature: string; step: number }>("SELECT feature,step FROM schema_steps").toArray()
    : [];
  const applied = new Set(steps.map((row) => `${row.feature}/${row.step}`));
  const withSteps = new Set(steps.map((row) => row.feature));
  // One made on demand waits for its first write, unless a table of its name is there already: made before its
  // steps were recorded (an object from before numbered steps, or before the feature was made on demand), which its
  // step 1 adopts.
  const made = features.filter(
    (feature) => !feature.onDemand || withSteps.has(feature.name) || tables.some(({ name }) => name === feature.name),
  );
  const pending = made.flatMap((feature) =>
    (feature.migrations ?? [])
      .filter(({ step }) => !applied.has(`${feature.name}/${step}`))
      .map((step) => ({ feature, ...step })),
  );
  const names = made.map(({ name }) => name);
  // A fresh object records its steps even when it has none to run: features made on demand record theirs there.
  if (pending.length === 0 && recorded) return { applied: [], fresh, made: names };
  storage.transactionSync(() => {
    // Statements run in as few `exec` calls as a function step allows: a fresh object's `CREATE`s are one call.
    let batch: string[] = recorded ? [] : [STEPS_TABLE];
    const runBatch = () => {
      if (batch.length > 0) sql.exec(batch.join(";\n"));
      batch = [];
    };
    for (const { feature, step, run } of pending) {
      if (fresh && feature.fresh) {
        // Every step is pending on a fresh object: the last shape is made once, in the first step's place.
        if (step === 1) batch.push(...feature.fresh);
      } else if (typeof run === "function") {
        runBatch();
        run(sql, storage.kv);
      } else batch.push(...run);
    }
    runBatch();
    // Recorded together after the steps, not one statement after each: a statement prepared before a schema change
    // is prepared again on its next run, so a row per step would prepare it as many times as there are steps.
    recordSteps(
      sql,
      pending.map(({ feature, step }) => [feature.name, step] as const),
    );
  });
  return { applied: pending.map(({ feature, step }) => `${feature.name}/${step}`), fresh, made: names };
}

/**
 * An object's start: applySteps on an object that has tables; null for a fresh one, which makes nothing yet — its
 * first link's 101 goes before its tables are made (LinkRuntime.makeTables), so no schema commit holds it back.
 */
export function startSchema(storage: DurableObjectStorage, features: readonly Migrating[]): SchemaStart | null {
  const tables = ownTables(storage.sql);
  return tables.length === 0 ? null : applySteps(storage, features, tables);
}
