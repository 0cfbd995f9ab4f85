/** A D1 that refuses writes (as a locked or full database does), and the owed writes a device's object retries. */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { linkStub } from "./link";

type Operation = "INSERT" | "UPDATE" | "DELETE";

const triggerName = (operation: Operation, table: string) => `outage_${operation}_${table}`;

/** Every `operation` on `table` fails until healD1. */
export async function breakD1(table: string, ...operations: Operation[]): Promise<void> {
  for (const operation of operations) {
    await env.DB.prepare(
      `CREATE TRIGGER ${triggerName(operation, table)} BEFORE ${operation} ON ${table} BEGIN SELECT RAISE(ABORT, 'injected: database is locked'); END`,
    ).run();
  }
}

export async function healD1(table: string, ...operations: Operation[]): Promise<void> {
  for (const operation of operations)
    await env.DB.prepare(`DROP TRIGGER IF EXISTS ${triggerName(operation, table)}`).run();
}

export interface OwedWrite {
  kind: string;
  key: string;
  attempts: number;
}

/** The device object's owed D1 writes, oldest first, with how often each was tried. */
export function owedWrites(deviceId: string): Promise<OwedWrite[]> {
  return runInDurableObject(linkStub(deviceId), (_instance, state) =>
    state.storage.sql
      .exec<{ kind: string; key: string; attempts: number }>("SELECT kind, key, attempts FROM d1_queue ORDER BY id")
      .toArray(),
  );
}

/** True when the first owed write of every key has been tried: the later ones of a key wait behind it untried. */
export const eachKeyTried = (rows: OwedWrite[]) =>
  rows.every((row) => (rows.find((first) => first.key === row.key)?.attempts ?? 0) > 0);

/** Ends every owed write's back-off and runs the object's alarm, which retries them. */
export async function retryOwedWrites(deviceId: string): Promise<void> {
  const stub = linkStub(deviceId);
  await runInDurableObject(stub, (_instance, state) => {
    state.storage.sql.exec("UPDATE d1_queue SET not_before = 0");
    state.storage.sql.exec("UPDATE deadlines SET due = 0 WHERE kind = 'd1-queue'");
  });
  await runDurableObjectAlarm(stub);
}
