/** The redial schedule the README and --help promise: about 1 s doubling to 30 s, with jitter. */
import { describe, expect, it } from "vitest";
import { redialDelay } from "../../bin/bridge/backoff.js";

describe("redialDelay", () => {
  it("doubles from about a second and never waits past 30 s", () => {
    const longest = (attempt: number) => redialDelay(attempt, () => 1);
    expect([0, 1, 2, 3, 4, 5, 6, 20].map(longest)).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000,
    ]);
  });

  it("draws each wait between half and all of its ceiling", () => {
    expect(redialDelay(0, () => 0)).toBe(500);
    expect(redialDelay(5, () => 0)).toBe(15_000);
    for (let i = 0; i < 100; i++) {
      const delay = redialDelay(3);
      expect(delay).toBeGreaterThanOrEqual(4_000);
      expect(delay).toBeLessThanOrEqual(8_000);
    }
  });
});
