import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { answerUnused } from "../shared/cards";
import type { LinkFeature } from "../../src/link/runtime/runtime";
import { buildRegistry, orderFeatures } from "../../src/link/runtime/registry";
import { registry } from "../../src/link/device-link";
import { applySteps, type Migrating, OWN_NAME, OWN_TABLES } from "../../src/link/runtime/schema-steps";
import { forgetTables, knowTables, OnDemandTables } from "../../src/link/runtime/tables-on-demand";
import { createDevice, createUser } from "../helpers/fixtures";
import { attachClient, hello, initializeResult, linkDevice, linkStub, type Peer, waitUntilUp } from "../helpers/link";
import { drain, fireDeadlines, statusOf } from "../helpers/linked";
import { dropAllTables, SCHEMA_BEFORE_STEPS } from "../helpers/schema-before-steps";

const names = (features: readonly LinkFeature[]) => features.map((f) => f.name);

describe("feature order", () => {
  it("puts every feature after the ones it names, keeping the listed order where nothing is declared", () => {
    const order = orderFeatures([
      { name: "cards", after: ["replay"] },
      { name: "chats" },
      { name: "replay", after: ["turns"] },
      { name: "turns" },
    ]);
    expect(names(order)).toEqual(["chats", "turns", "replay", "cards"]);
    expect(names(buildRegistry([{ name: "b", after: ["a"] }, { name: "a" }]).features)).toEqual(["a", "b"]);
  });

  it("refuses a circle, a name no feature has, and two features of one name", () => {
    expect(() => buildRegistry([{ name: "a", after: ["b"] }, { name: "b", after: ["a"] }, { name: "c" }])).toThrow(
      "the features' order is impossible (a circle): a after b; b after a",
    );
    expect(() => buildRegistry([{ name: "a", after: ["push"] }])).toThrow(
      "a runs after push, but no feature is named push",
    );
    expect(() => buildRegistry([{ name: "a" }, { name: "a" }])).toThrow("two features are named a");
  });

  it("refuses schema steps that are not numbered 1, 2, 3 … in order", () => {
    const step = (n: number) => ({ step: n, run: [] });
    expect(() => buildRegistry([{ name: "a", migrations: [step(1), step(3)] }])).toThrow(
      "a's schema steps must be numbered 1, 2, 3, … in order; step 2 is numbered 3",
    );
    expect(() => buildRegistry([{ name: "a", migrations: [step(1), step(1)] }])).toThrow("step 2 is numbered 1");
    const moving = { step: 2, run: () => undefined };
    expect(() => buildRegistry([{ name: "a", onDemand: true, migrations: [step(1), moving] }])).toThrow(
      "a is made on demand, so its step 2 must be statements (or give fresh)",
    );
    expect(() =>
      buildRegistry([{ name: "a", onDemand: true, migrations: [step(1), moving], fresh: [] }]),
    ).not.toThrow();
  });
});

describe("schema steps", () => {
  it("applies each step once, a later step on an object that has the earlier ones, and nothing of a failing step", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const first = { step: 1, run: ["CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)"] };
    const second = { step: 2, run: ["ALTER TABLE notes ADD COLUMN at INTEGER", "UPDATE notes SET at = 7"] };
    const failing = { step: 3, run: ["INSERT INTO notes (text) VALUES ('half')", "INSERT INTO nowhere VALUES (1)"] };
    await runInDurableObject(linkStub(device.deviceId), (_instance, state) => {
      const { sql } = state.storage;
      expect(applySteps(state.storage, [{ name: "notes", migrations: [first] }]).applied).toEqual(["notes/1"]);
      sql.exec("INSERT INTO notes (text) VALUES ('kept')");
      expect(applySteps(state.storage, [{ name: "notes", migrations: [first] }]).applied).toEqual([]);
      expect(applySteps(state.storage, [{ name: "notes", migrations: [first, second] }]).applied).toEqual(["notes/2"]);
      expect(sql.exec("SELECT text, at FROM notes").toArray()).toEqual([{ text: "kept", at: 7 }]);
      expect(() => applySteps(state.storage, [{ name: "notes", migrations: [first, second, failing] }])).toThrow(
        /no such table: nowhere/,
      );
      expect(sql.exec("SELECT text FROM notes").toArray()).toEqual([{ text: "kept" }]);
      const recorded = sql.exec("SELECT step FROM schema_steps WHERE feature = 'notes' ORDER BY step").toArray();
      expect(recorded).toEqual([{ step: 1 }, { step: 2 }]);
    });
  });

  it("applies a fresh object's steps in one transaction, and on an object that has them all runs no write", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const notes = {
      name: "notes",
      migrations: [
        { step: 1, run: ["CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)"] },
        { step: 2, run: ["ALTER TABLE notes ADD COLUMN at INTEGER"] },
      ],
    };
    await runInDurableObject(linkStub(device.deviceId), (_instance, state) => {
      const { sql } = state.storage;
      dropAllTables(sql);
      const statements: string[] = [];
      let transactions = 0;
      const watched = {
        sql: {
          exec: (query: string, ...bindings: SqlStorageValue[]) => {
            statements.push(query);
            return sql.exec(query, ...bindings);
          },
        },
        transactionSync: <T>(run: () => T) => {
          transactions++;
          return state.storage.transactionSync(run);
        },
      } as unknown as DurableObjectStorage;
      expect(applySteps(watched, [notes]).applied).toEqual(["notes/1", "notes/2"]);
      expect(transactions).toBe(1);
      statements.length = 0;
      expect(applySteps(watched, [notes]).applied).toEqual([]);
      // A write (CREATE … IF NOT EXISTS included) would hold the first output of every wake behind a commit.
      expect(statements.filter((query) => !/^\s*SELECT\b/i.test(query))).toEqual([]);
      expect(transactions).toBe(1);
    });
  });

  it("makes a fresh object's tables from a feature's fresh statements, recording its steps unrun; an object with tables runs the steps", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const notes: Migrating = {
      name: "notes",
      migrations: [
        { step: 1, run: ["CREATE TABLE notes (id INTEGER PRIMARY KEY)"] },
        {
          step: 2,
          run: () => {
            throw new Error("step 2 ran");
          },
        },
      ],
      fresh: ["CREATE TABLE notes (id INTEGER PRIMARY KEY, at INTEGER)"],
    };
    await runInDurableObject(linkStub(device.deviceId), (_instance, state) => {
      const { sql } = state.storage;
      const columns = () => sql.exec("SELECT name FROM pragma_table_info('notes')").toArray();
      dropAllTables(sql);
      expect(applySteps(state.storage, [notes])).toEqual({
        applied: ["notes/1", "notes/2"],
        fresh: true,
        made: ["notes"],
      });
      expect(columns()).toEqual([{ name: "id" }, { name: "at" }]);
      expect(sql.exec("SELECT feature, step FROM schema_steps ORDER BY step").toArray()).toEqual([
        { feature: "notes", step: 1 },
        { feature: "notes", step: 2 },
      ]);

      dropAllTables(sql);
      sql.exec("CREATE TABLE older (id INTEGER PRIMARY KEY)");
      expect(() => applySteps(state.storage, [notes])).toThrow("step 2 ran");
      expect(sql.exec("SELECT name FROM sqlite_master WHERE name IN ('notes', 'schema_steps')").toArray()).toEqual([]);
    });
  });

  it("holds every feature's fresh tables equal to what its steps make", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    // Every table and index, its SQL in one spelling: SQLite keeps a statement's text as written, quotes a renamed
    // table's name, and an ADD COLUMN appends to the text.
    const schemaOf = (sql: SqlStorage) =>
      sql
        .exec<{ type: string; name: string; sql: string }>(
          `SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND ${OWN_NAME} ORDER BY type, name`,
        )
        .toArray()
        .map((entry) => ({
          ...entry,
          sql: entry.sql
            .replace(/IF NOT EXISTS /gi, "")
            .replaceAll('"', "")
            .replace(/\s+/g, " ")
            .replace(/\s*([(),])\s*/g, "$1"),
        }));
    const stepsOf = (sql: SqlStorage) =>
      sql.exec("SELECT feature, step FROM schema_steps ORDER BY feature, step").toArray();
    const withFresh = registry.features.filter((feature) => feature.fresh !== undefined).map((f) => f.name);
    expect(withFresh).toEqual(expect.arrayContaining(["cards", "replay"]));
    const onDemand = registry.features.filter((feature) => feature.onDemand);
    expect(names(onDemand)).toEqual(expect.arrayContaining(["cards", "turns", "chunks"]));
    await runInDurableObject(linkStub(device.deviceId), (_instance, state) => {
      const { sql } = state.storage;
      dropAllTables(sql);
      applySteps(
        state.storage,
        registry.features.map(({ fresh: _fresh, onDemand: _onDemand, ...feature }) => feature),
      );
      const bySteps = { schema: schemaOf(sql), steps: stepsOf(sql), kv: [...state.storage.kv.list()] };
      dropAllTables(sql);
      applySteps(state.storage, registry.features);
      // What a start leaves unmade, each feature's first write makes.
      for (const feature of onDemand) new OnDemandTables(sql, feature).making(() => undefined);
      expect({ schema: schemaOf(sql), steps: stepsOf(sql), kv: [...state.storage.kv.list()] }).toEqual(bySteps);
      expect(bySteps.schema.map(({ name }) => name)).toEqual(
        expect.arrayContaining(["cards", "card_refusals", "link"]),
      );
    });
  });

  it("makes a feature's tables made on demand at its first write, reading nothing before; a start runs its later steps once it is made", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const base: Migrating = { name: "base", migrations: [{ step: 1, run: ["CREATE TABLE base (id INTEGER)"] }] };
    const first = { step: 1, run: ["CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)"] };
    const notes: Migrating = { name: "notes", onDemand: true, migrations: [first] };
    const later: Migrating = {
      ...notes,
      migrations: [first, { step: 2, run: ["ALTER TABLE notes ADD COLUMN at INTEGER", "UPDATE notes SET at = 7"] }],
    };
    await runInDurableObject(linkStub(device.deviceId), (_instance, state) => {
      const { sql } = state.storage;
      const own = () =>
        sql
          .exec<{ name: string }>(OWN_TABLES)
          .toArray()
          .map(({ name }) => name)
          .sort();
      const texts = () =>
        new OnDemandTables(sql, notes).ifMade([], (s) => s.exec<{ text: string }>("SELECT text FROM notes").toArray());
      dropAllTables(sql);
      const start = applySteps(state.storage, [base, notes]);
      expect(start).toEqual({ applied: ["base/1"], fresh: true, made: ["base"] });
      knowTables(sql, start.made);
      expect(own()).toEqual(["base", "schema_steps"]);
      expect(texts()).toEqual([]);
      // A wake before anything was written leaves it unmade, a later step included.
      expect(applySteps(state.storage, [base, later])).toEqual({ applied: [], fresh: false, made: ["base"] });

      new OnDemandTables(sql, notes).making((s) => s.exec("INSERT INTO notes (text) VALUES ('first')"));
      expect(own()).toEqual(["base", "notes", "schema_steps"]);
      expect(texts()).toEqual([{ text: "first" }]);
      expect(applySteps(state.storage, [base, notes]).applied).toEqual([]);
      expect(applySteps(state.storage, [base, later])).toEqual({
        applied: ["notes/2"],
        fresh: false,
        made: ["base", "notes"],
      });
      expect(sql.exec("SELECT text, at FROM notes").toArray()).toEqual([{ text: "first", at: 7 }]);
    });
  });

  it("reads a feature made on demand as empty again after the transaction that made its tables rolled back", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const notes: Migrating = {
      name: "notes",
      onDemand: true,
      migrations: [{ step: 1, run: ["CREATE TABLE notes (text TEXT NOT NULL)"] }],
    };
    await runInDurableObject(linkStub(device.deviceId), (_instance, state) => {
      const { sql } = state.storage;
      dropAllTables(sql);
      knowTables(sql, applySteps(state.storage, [notes]).made);
      const tables = new OnDemandTables(sql, notes);
      const texts = () => tables.ifMade([], (s) => s.exec<{ text: string }>("SELECT text FROM notes").toArray());
      expect(() =>
        state.storage.transactionSync(() => {
          tables.making((s) => s.exec("INSERT INTO notes (text) VALUES ('undone')"));
          throw new Error("the handler failed");
        }),
      ).toThrow("the handler failed");
      // The object was told its tables were made; the rollback undid them.
      expect(texts).toThrow(/no such table: notes/);
      forgetTables(sql);
      expect(texts()).toEqual([]);
      tables.making((s) => s.exec("INSERT INTO notes (text) VALUES ('kept')"));
      expect(texts()).toEqual([{ text: "kept" }]);
    });
  });

  it("starts a fresh object with no table; a client's attach makes them as a fresh object's, all but those made on demand", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const own = () =>
      runInDurableObject(linkStub(device.deviceId), (_instance, state) =>
        state.storage.sql
          .exec<{ name: string }>(OWN_TABLES)
          .toArray()
          .map(({ name }) => name),
      );
    await runInDurableObject(linkStub(device.deviceId), (_instance, state) => {
      // The start wrote nothing: a device's first link gets its 101 before any table is made.
      expect(state.storage.sql.exec(`SELECT name FROM sqlite_master WHERE type = 'table'`).toArray()).toEqual([]);
      // What wrangler dev's object wrapper makes as the object starts, after the object's own start.
      state.storage.sql.exec("CREATE TABLE __miniflare_do_name (id INTEGER PRIMARY KEY, name TEXT)");
    });
    const client = await attachClient(user, device.deviceId);
    expect(await statusOf(client)).toMatchObject({ link: "down" });
    // Only what a first link writes: no chunks table (made by the first text kept), no index.
    expect((await own()).sort()).toEqual(["d1_queue", "deadlines", "link", "meta", "outbound", "schema_steps"]);
    const indexes = await runInDurableObject(linkStub(device.deviceId), (_instance, state) =>
      state.storage.sql.exec(`SELECT name FROM sqlite_master WHERE type='index' AND sql IS NOT NULL`).toArray(),
    );
    expect(indexes).toEqual([]);
    await linkDevice(device);
    await waitUntilUp(client);
    const linked = await own();
    for (const name of ["cards", "card_refusals", "turns", "terminals", "push_outbox", "chunks"])
      expect(linked).not.toContain(name);
    const row = await env.DB.prepare("SELECT online FROM devices WHERE id = ?").bind(device.deviceId).first();
    expect(row).toEqual({ online: 1 });
  });

  it("opens an object written by the schema before numbered steps and finds its rows: the last link, a kept prompt, its turn's frames, an ended card", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const stub = linkStub(device.deviceId);
    const frames = [1, 2].map((n) =>
      JSON.stringify({
        jsonrpc: "2.0",
        method: "session/update",
        params: {
          sessionId: "ses_old",
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `part ${n}` } },
        },
      }),
    );
    const prompt = {
      sessionId: "ses_old",
      prompt: [{ type: "text", text: "kept" }],
      _meta: { lembas: { turnId: "turn_old" } },
    };
    const now = Date.now();
    await runInDurableObject(stub, (_instance, state) => {
      const { sql } = state.storage;
      dropAllTables(sql);
      for (const statement of SCHEMA_BEFORE_STEPS) sql.exec(statement);
      const said = hello().params;
      sql.exec(
        "INSERT INTO link VALUES (1, 'link-old', 'down', 2, ?, ?, ?, ?, ?)",
        JSON.stringify({ ...said, device: { host: "old-host", platform: "linux" } }),
        JSON.stringify(initializeResult()),
        now - 60_000,
        now - 59_000,
        now - 1_000,
      );
      sql.exec("INSERT INTO meta VALUES ('device_id', ?), ('owner_id', ?)", device.deviceId, user.userId);
      sql.exec(
        "INSERT INTO turns (id, session_id, turn_id, since, running, kept, link_id) VALUES (1, 'ses_old', 'turn_old', ?, 1, 1, 'link-old')",
        now - 30_000,
      );
      sql.exec("INSERT INTO chunks VALUES ('turn', '1', 0, ?)", JSON.stringify(prompt));
      sql.exec(
        "INSERT INTO replay_batches (session_id, frames, bytes, texts) VALUES ('ses_old', 2, 10, ?)",
        frames.join("\u001e"),
      );
      sql.exec(
        "INSERT INTO cards VALUES ('call_old', 'session/request_permission', 'ses_old', '0', 'link-old', 0, ?, NULL, ?, 'link_down')",
        now - 20_000,
        now - 1_000,
      );
    });
    await evictDurableObject(stub);

    const client: Peer = await attachClient(user, device.deviceId);
    expect(await client.next()).toMatchObject({
      method: "_instance/replay",
      params: { sessionId: "ses_old", turnIds: ["turn_old"], frames: 2, dropped: 0 },
    });
    expect(JSON.stringify(await client.next())).toBe(frames[0]);
    expect(JSON.stringify(await client.next())).toBe(frames[1]);
    const status = await statusOf(client);
    expect(status).toMatchObject({ link: "down", hello: { device: { host: "old-host" } } });
    expect(status.turns).toEqual([{ sessionId: "ses_old", turnId: "turn_old", since: now - 30_000 }]);
    client.send({
      jsonrpc: "2.0",
      id: "card:ses_old/call_old",
      result: { outcome: { outcome: "selected", optionId: "once" } },
    });
    expect(await client.next()).toEqual(answerUnused("card:ses_old/call_old", "link_down"));

    const { peer: link } = await linkDevice(device);
    expect(await link.next()).toMatchObject({ method: "session/prompt", params: prompt });
    const steps = await runInDurableObject(stub, (_instance, state) =>
      state.storage.sql.exec<{ feature: string; step: number }>("SELECT feature, step FROM schema_steps").toArray(),
    );
    expect(steps).toEqual(
      expect.arrayContaining([
        { feature: "core", step: 2 },
        { feature: "core", step: 3 },
        { feature: "turns", step: 1 },
        { feature: "chunks", step: 1 },
      ]),
    );
    const indexes = await runInDurableObject(stub, (_instance, state) =>
      state.storage.sql
        .exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type='index' AND name LIKE 'outbound%'`)
        .toArray(),
    );
    expect(indexes).toEqual([]);
  });

  it("migrates an object whose chunks were core's and whose requests were indexed: its rows kept, the indexes dropped", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const stub = linkStub(device.deviceId);
    const prompt = { sessionId: "ses_kept", prompt: [{ type: "text", text: "kept" }], _meta: { lembas: {} } };
    await runInDurableObject(stub, (_instance, state) => {
      const { sql } = state.storage;
      dropAllTables(sql);
      // The schema as objects made it while core's step 1 made the chunks table and the two indexes, and the turns
      // table made by a first turn.
      sql.exec(
        "CREATE TABLE schema_steps (feature TEXT NOT NULL, step INTEGER NOT NULL, applied_at INTEGER NOT NULL, PRIMARY KEY (feature, step))",
      );
      for (const statement of SCHEMA_BEFORE_STEPS.filter((s) => !/\b(replay_|cards|terminals)/.test(s)))
        sql.exec(statement);
      sql.exec(`CREATE TABLE d1_queue (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, key TEXT NOT NULL, args TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0, not_before INTEGER NOT NULL DEFAULT 0, last_error TEXT,
        created_at INTEGER NOT NULL)`);
      sql.exec(
        "INSERT INTO schema_steps VALUES ('core', 1, 0), ('core', 2, 0), ('d1-queue', 1, 0), ('turns', 1, 0), ('replay', 1, 0), ('replay', 2, 0), ('replay', 3, 0)",
      );
      sql.exec("INSERT INTO meta VALUES ('device_id', ?), ('owner_id', ?)", device.deviceId, user.userId);
      sql.exec(
        "INSERT INTO turns (id, session_id, turn_id, since, running, kept, link_id) VALUES (1, 'ses_kept', NULL, ?, 1, 1, 'link-old')",
        Date.now() - 30_000,
      );
      sql.exec("INSERT INTO chunks VALUES ('turn', '1', 0, ?)", JSON.stringify(prompt));
    });
    await evictDurableObject(stub);

    const { peer: link } = await linkDevice(device);
    expect(await link.next()).toMatchObject({ method: "session/prompt", params: prompt });
    const after = await runInDurableObject(stub, (_instance, state) => ({
      indexes: state.storage.sql
        .exec(`SELECT name FROM sqlite_master WHERE type='index' AND name LIKE 'outbound%'`)
        .toArray(),
      steps: state.storage.sql
        .exec("SELECT feature, step FROM schema_steps WHERE feature IN ('core', 'chunks') ORDER BY feature, step")
        .toArray(),
    }));
    expect(after).toEqual({
      indexes: [],
      steps: [
        { feature: "chunks", step: 1 },
        { feature: "core", step: 1 },
        { feature: "core", step: 2 },
        { feature: "core", step: 3 },
      ],
    });
  });

  it("re-keys an open card by session and toolCallId (cards step 2), with its params and its deadline", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const stub = linkStub(device.deviceId);
    const params = {
      sessionId: "ses_old",
      toolCall: { toolCallId: "call_open", title: "ls" },
      options: [{ optionId: "ok", name: "OK", kind: "allow_once" }],
    };
    // A live link (its socket outlives the eviction below), whose object is then rewritten in the earlier schema.
    await linkDevice(device);
    await runInDurableObject(stub, async (_instance, state) => {
      const { sql } = state.storage;
      const linkId = sql.exec<{ link_id: string }>("SELECT link_id FROM link").one().link_id;
      dropAllTables(sql);
      for (const statement of SCHEMA_BEFORE_STEPS) sql.exec(statement);
      const now = Date.now();
      sql.exec(
        "INSERT INTO link VALUES (1, ?, 'up', 2, ?, ?, ?, ?, NULL)",
        linkId,
        JSON.stringify(hello().params),
        JSON.stringify(initializeResult()),
        now - 60_000,
        now - 59_000,
      );
      sql.exec("INSERT INTO meta VALUES ('device_id', ?), ('owner_id', ?)", device.deviceId, user.userId);
      sql.exec(
        "INSERT INTO cards VALUES ('call_open', 'session/request_permission', 'ses_old', '7', ?, 0, ?, ?, NULL, NULL)",
        linkId,
        now - 1_000,
        now + 300_000,
      );
      sql.exec("INSERT INTO chunks VALUES ('card', 'call_open', 0, ?)", JSON.stringify(params));
      sql.exec("INSERT INTO deadlines VALUES ('card', 'call_open', ?)", now + 300_000);
      // As the object had armed it when the card opened.
      await state.storage.setAlarm(now + 300_000);
    });
    await evictDurableObject(stub);

    const client = await attachClient(user, device.deviceId);
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      id: "card:ses_old/call_open",
      method: "session/request_permission",
      params,
    });
    await fireDeadlines(device.deviceId, "card");
    expect(await drain(client)).toEqual([
      {
        jsonrpc: "2.0",
        method: "_lembas/permission/settled",
        params: { sessionId: "ses_old", toolCallId: "call_open" },
      },
      { jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: "card:ses_old/call_open" } },
      {
        jsonrpc: "2.0",
        method: "_instance/card/decided",
        params: expect.objectContaining({ sessionId: "ses_old", toolCallId: "call_open", ended: "timed_out" }),
      },
    ]);
  });
});
