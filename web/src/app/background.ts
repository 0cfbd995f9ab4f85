/** Starts async work from an event handler or a timer: a failure is logged rather than lost as an unhandled rejection. */
export function background(task: Promise<unknown>): void {
  task.catch((err: unknown) => console.error(err));
}
