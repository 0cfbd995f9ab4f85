/** Fails a test in which a scripted peer saw a breach of the wire's rules (wire-rules.ts). */
import { afterEach } from "vitest";
import { takeBreaches } from "./wire-rules.js";

afterEach(() => {
  const breaches = takeBreaches();
  if (breaches.length > 0) throw new Error(breaches.join("\n"));
});
