/** Progress and state go to stderr: stdout belongs to nobody here, and the socket carries protocol only. */
export function say(sentence: string): void {
  process.stderr.write(`lembas-edge: ${sentence}\n`);
}

/** A stop the person must act on: said once, with the exit code the process ends with. */
export class Stop extends Error {
  constructor(
    sentence: string,
    readonly exitCode = 1,
  ) {
    super(sentence);
    this.name = "Stop";
  }
}
