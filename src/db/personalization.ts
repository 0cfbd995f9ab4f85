/** An account's saved personalization (table `personalization`) and whether the operator made it available. */
import { prepared } from "./prepared";

export interface Personalization {
  enabled: boolean;
  available: boolean;
  personality: string;
  personality_custom: string;
  instructions: string;
}

export type PersonalizationChange = Partial<Omit<Personalization, "available">>;

interface Row {
  enabled: number | null;
  available: number | null;
  personality: string | null;
  personality_custom: string | null;
  instructions: string | null;
}

export async function readPersonalization(db: D1Database, userId: string): Promise<Personalization> {
  const row = await prepared(
    db,
    "SELECT p.enabled,s.personalization_available AS available,p.personality,p.personality_custom,p.instructions " +
      "FROM users u LEFT JOIN personalization p ON p.user_id=u.id LEFT JOIN account_settings s ON s.user_id=u.id " +
      "WHERE u.id=?",
    userId,
  ).first<Row>();
  return {
    enabled: row?.enabled === 1,
    available: row?.available === 1,
    personality: row?.personality ?? "",
    personality_custom: row?.personality_custom ?? "",
    instructions: row?.instructions ?? "",
  };
}

const COLUMNS = ["enabled", "personality", "personality_custom", "instructions"] as const;

/** Changes only the fields given; the others keep what was saved. */
export async function updatePersonalization(
  db: D1Database,
  userId: string,
  change: PersonalizationChange,
  now: number,
): Promise<void> {
  const given = COLUMNS.filter((c) => change[c] !== undefined);
  const values = given.map((c) => (c === "enabled" ? Number(change.enabled) : change[c]!));
  const sets = given.map((c) => `${c} = excluded.${c}`).concat("updated_at = excluded.updated_at");
  await prepared(
    db,
    `INSERT INTO personalization (user_id,${[...given, "updated_at"].join(", ")}) VALUES (?,${[...given, "updated_at"].map(() => "?").join(", ")}) ` +
      `ON CONFLICT(user_id) DO UPDATE SET ${sets.join(", ")}`,
    userId,
    ...values,
    now,
  ).run();
}
