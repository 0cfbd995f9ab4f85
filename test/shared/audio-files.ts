/**
 * Audio files of a known length in each container a transcription takes, built byte by byte as their
 * specifications lay them out (the payloads are silence or filler: only the containers are read).
 */

const concat = (...parts: (Uint8Array | number[])[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};
const text = (s: string) => [...s].map((c) => c.charCodeAt(0));
const le = (value: number, bytes: number) =>
  Array.from({ length: bytes }, (_, i) => Math.floor(value / 256 ** i) % 256);
const be = (value: number, bytes: number) => le(value, bytes).reverse();

/** PCM WAV, 16-bit mono at `rate`. */
export function wavFile(seconds: number, rate = 8000): Uint8Array {
  const data = Math.round(seconds * rate) * 2;
  const fmt = [...le(1, 2), ...le(1, 2), ...le(rate, 4), ...le(rate * 2, 4), ...le(2, 2), ...le(16, 2)];
  return concat(
    text("RIFF"),
    le(36 + data, 4),
    text("WAVEfmt "),
    le(16, 4),
    fmt,
    text("data"),
    le(data, 4),
    new Uint8Array(data),
  );
}

/** MP3 behind an ID3v2 tag: MPEG-2.5 layer III frames at 8 kbit/s, 8 kHz (72 bytes, 72 ms each). */
export function mp3File(frames: number): Uint8Array {
  const id3 = [...text("ID3"), 4, 0, 0, 0, 0, 0, 10, ...new Array<number>(10).fill(0)];
  const frame = [0xff, 0xe3, 0x18, 0xc0, ...new Array<number>(68).fill(0)];
  return concat(id3, ...Array.from({ length: frames }, () => frame));
}

/** FLAC: the marker and a STREAMINFO saying `samples` at `rate` (no frames needed to be read). */
export function flacFile(seconds: number, rate = 16000): Uint8Array {
  const samples = Math.round(seconds * rate);
  const info = [
    ...be(4096, 2),
    ...be(4096, 2),
    0,
    0,
    0,
    0,
    0,
    0,
    // rate (20 bits), channels − 1 (3), bits − 1 (5), samples (36)
    (rate >> 12) & 0xff,
    (rate >> 4) & 0xff,
    ((rate & 0x0f) << 4) | (0 << 1) | (15 >> 4),
    ((15 & 0x0f) << 4) | (Math.floor(samples / 2 ** 32) & 0x0f),
    ...be(samples % 2 ** 32, 4),
    ...new Array<number>(16).fill(0),
  ];
  return concat(text("fLaC"), [0x80, 0, 0, 34], info, new Uint8Array(64));
}

/** An Opus packet of one 20 ms CELT frame (TOC config 31, code 0) and some filler. */
const opusPacket = () => [0xf8, ...new Array<number>(39).fill(0x55)];

function oggPage(flags: number, granule: number, sequence: number, packets: number[][]): number[] {
  const lacing: number[] = [];
  for (const p of packets) {
    for (let left = p.length; ; left -= 255) {
      lacing.push(Math.min(left, 255));
      if (left < 255) break;
    }
  }
  return [
    ...text("OggS"),
    0,
    flags,
    ...le(granule, 8),
    ...le(0x4c4d4253, 4),
    ...le(sequence, 4),
    0,
    0,
    0,
    0,
    lacing.length,
    ...lacing,
    ...packets.flat(),
  ];
}

/** Ogg Opus: the two header pages, then 20 ms packets, 50 to a page. */
export function oggOpusFile(seconds: number): Uint8Array {
  const head = [...text("OpusHead"), 1, 1, ...le(312, 2), ...le(16000, 4), 0, 0, 0];
  const tags = [...text("OpusTags"), ...le(4, 4), ...text("test"), ...le(0, 4)];
  const pages = [oggPage(2, 0, 0, [head]), oggPage(0, 0, 1, [tags])];
  const count = Math.round(seconds * 50);
  for (let sent = 0; sent < count; sent += 50) {
    const n = Math.min(50, count - sent);
    pages.push(oggPage(sent + n === count ? 4 : 0, (sent + n) * 960 + 312, pages.length, Array(n).fill(opusPacket())));
  }
  return concat(...pages);
}

const ebml = (id: number[], body: number[]) => [...id, 0x01, ...be(body.length, 7), ...body];
const UNKNOWN = [0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];

/** WebM as a browser's MediaRecorder writes it: Segment and Clusters of unknown size, Opus in SimpleBlocks. */
export function webmOpusFile(seconds: number): Uint8Array {
  const header = ebml([0x1a, 0x45, 0xdf, 0xa3], ebml([0x42, 0x82], text("webm")));
  const info = ebml([0x15, 0x49, 0xa9, 0x66], ebml([0x2a, 0xd7, 0xb1], be(1_000_000, 3)));
  const track = ebml([0xae], [...ebml([0xd7], [1]), ...ebml([0x86], text("A_OPUS"))]);
  const parts = [header, [0x18, 0x53, 0x80, 0x67, ...UNKNOWN], info, ebml([0x16, 0x54, 0xae, 0x6b], track)];
  const count = Math.round(seconds * 50);
  for (let i = 0; i < count; i += 100) {
    parts.push([0x1f, 0x43, 0xb6, 0x75, ...UNKNOWN], ebml([0xe7], be(i * 20, 4)));
    for (let j = 0; j < Math.min(100, count - i); j++)
      parts.push(ebml([0xa3], [0x81, ...be(j * 20, 2), 0x80, ...opusPacket()]));
  }
  return concat(...parts);
}

const box = (type: string, ...body: number[][]) => {
  const inner = body.flat();
  return [...be(8 + inner.length, 4), ...text(type), ...inner];
};

/** M4A: a sound track whose sample table holds AAC frames of 1,024 samples at 16 kHz. */
export function m4aFile(seconds: number): Uint8Array {
  const rate = 16000;
  const frames = Math.round((seconds * rate) / 1024);
  const mdhd = box("mdhd", [0, 0, 0, 0], le(0, 8), be(rate, 4), be(frames * 1024, 4), [0x55, 0xc4, 0, 0]);
  const hdlr = box("hdlr", [0, 0, 0, 0], le(0, 4), text("soun"), le(0, 12), [0]);
  const stts = box("stts", [0, 0, 0, 0], be(1, 4), be(frames, 4), be(1024, 4));
  const moov = box("moov", box("trak", box("mdia", mdhd, hdlr, box("minf", box("stbl", stts)))));
  return concat(
    box("ftyp", text("M4A "), be(0, 4), text("isomM4A ")),
    moov,
    box("mdat", new Array<number>(frames * 8).fill(0x21)),
  );
}
