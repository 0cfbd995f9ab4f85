/**
 * A WebSocket client that stops reading: the upgrade done by hand on a plain TCP socket, which is then paused, so
 * nothing is read from the kernel — the way a stalled browser tab or a frozen process stops reading. (A WebSocket
 * library would pause and resume the socket itself.) Resumed later, it reads what had been sent to it, counting
 * the bytes of its data frames, up to the close frame.
 */
import { randomBytes } from "node:crypto";
import { connect, type Socket } from "node:net";

export interface PausedSocket {
  /**
   * Reads everything sent so far and then until the close frame; its data bytes and the close code (null: no close
   * frame, or more than `atMost` data bytes came first — then it stops reading there).
   */
  resumeToClose(atMost?: number): Promise<{ dataBytes: number; code: number | null }>;
  destroy(): void;
}

export function openPausedSocket(url: string, headers: Record<string, string>): Promise<PausedSocket> {
  const { hostname, port, pathname } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(Number(port), hostname);
    let head = Buffer.alloc(0);
    socket.once("error", reject);
    socket.once("connect", () => {
      const lines = [
        `GET ${pathname} HTTP/1.1`,
        `Host: ${hostname}:${port}`,
        "Upgrade: websocket",
        "Connection: Upgrade",
        `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}`,
        "Sec-WebSocket-Version: 13",
        ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
      ];
      socket.write(`${lines.join("\r\n")}\r\n\r\n`);
    });
    const onHead = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      socket.off("data", onHead);
      socket.pause();
      const status = head.subarray(0, head.indexOf("\r\n")).toString();
      if (!/^HTTP\/1\.1 101/.test(status)) return reject(new Error(`upgrade refused: ${status}`));
      resolve(pausedSocket(socket, head.subarray(end + 4)));
    };
    socket.on("data", onHead);
  });
}

function pausedSocket(socket: Socket, early: Buffer): PausedSocket {
  return {
    destroy: () => socket.destroy(),
    resumeToClose: (atMost = Number.POSITIVE_INFINITY) =>
      new Promise((resolve) => {
        let pending = early;
        let dataBytes = 0;
        const done = (code: number | null) => {
          socket.destroy();
          resolve({ dataBytes, code });
        };
        // Server frames are unmasked: opcode, length (7 bits, or 16 / 64 bits after 126 / 127), payload.
        const parse = () => {
          for (;;) {
            if (pending.length < 2) return;
            const opcode = pending[0]! & 0x0f;
            let length = pending[1]! & 0x7f;
            let offset = 2;
            if (length === 126) {
              if (pending.length < 4) return;
              length = pending.readUInt16BE(2);
              offset = 4;
            } else if (length === 127) {
              if (pending.length < 10) return;
              length = Number(pending.readBigUInt64BE(2));
              offset = 10;
            }
            if (pending.length < offset + length) return;
            const payload = pending.subarray(offset, offset + length);
            pending = pending.subarray(offset + length);
            if (opcode === 0x8) return done(payload.length >= 2 ? payload.readUInt16BE(0) : null);
            if (opcode <= 0x2) dataBytes += length;
            if (dataBytes > atMost) return done(null);
          }
        };
        socket.on("data", (chunk: Buffer) => {
          pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
          parse();
        });
        socket.once("close", () => done(null));
        parse();
        socket.resume();
      }),
  };
}
