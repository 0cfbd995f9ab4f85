/**
 * Writes that hold no output back: made with `allowUnconfirmed`, which applies them at once without holding the
 * object's output for their commit. Nobody awaits them, so a failure is logged (logged("keeping x"): "keeping x
 * failed").
 */
export const UNCONFIRMED = { allowUnconfirmed: true } as const;

export const logged = (what: string) => (err: unknown) => console.error(`${what} failed`, err);
