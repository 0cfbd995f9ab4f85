/**
 * How long a piece of audio lasts, read from its container before it is sent anywhere: WAV, MP3, Ogg (Opus,
 * Vorbis), FLAC, WebM/Matroska and MP4/M4A — the containers OpenAI's transcription takes. A transcription is held
 * and charged by this duration, so what it costs never depends on what the provider answers (nor on the answer's
 * format). Where the file says how much it plays in a way a decoder must follow (MP3 frames walked to the end, Opus
 * packets' own durations, MP4's sample table), that is what is counted; elsewhere the container's header
 * (WAV's data size, FLAC's sample count, Vorbis's last granule, Matroska's timestamps). null: not a container this
 * reads, or one that does not hold together — then the caller counts the size at the lowest bitrate.
 */

const ascii = (b: Uint8Array, at: number, text: string) => {
  for (let i = 0; i < text.length; i++) if (b[at + i] !== text.charCodeAt(i)) return false;
  return true;
};
const u16le = (b: Uint8Array, at: number) => b[at]! | (b[at + 1]! << 8);
const u32le = (b: Uint8Array, at: number) => (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16)) + b[at + 3]! * 2 ** 24;
const u32be = (b: Uint8Array, at: number) => b[at]! * 2 ** 24 + ((b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!);
const u64be = (b: Uint8Array, at: number) => u32be(b, at) * 2 ** 32 + u32be(b, at + 4);
const u64le = (b: Uint8Array, at: number) => u32le(b, at) + u32le(b, at + 4) * 2 ** 32;

/** The audio's duration in ms, or null when it is not read (see above). */
export function audioDurationMs(b: Uint8Array): number | null {
  if (b.length < 12) return null;
  let ms: number | null = null;
  if (ascii(b, 0, "RIFF") && ascii(b, 8, "WAVE")) ms = wav(b);
  else if (ascii(b, 0, "fLaC")) ms = flac(b);
  else if (ascii(b, 0, "OggS")) ms = ogg(b);
  else if (u32be(b, 0) === 0x1a45dfa3) ms = matroska(b);
  else if (ascii(b, 4, "ftyp")) ms = mp4(b);
  else ms = mp3(b);
  return ms !== null && Number.isFinite(ms) && ms > 0 ? Math.ceil(ms) : null;
}

/** PCM (1), float (3), or either inside WAVE_FORMAT_EXTENSIBLE; the byte rate worked out, not taken as declared. */
function wav(b: Uint8Array): number | null {
  let bytesPerSecond = 0;
  for (let at = 12; at + 8 <= b.length; ) {
    const size = u32le(b, at + 4);
    const body = at + 8;
    if (ascii(b, at, "fmt ") && size >= 16 && body + 16 <= b.length) {
      let format = u16le(b, body);
      if (format === 0xfffe && size >= 26) format = u16le(b, body + 24);
      const channels = u16le(b, body + 2);
      const rate = u32le(b, body + 4);
      const bits = u16le(b, body + 14);
      if ((format !== 1 && format !== 3) || channels === 0 || rate === 0 || bits === 0 || bits > 64) return null;
      bytesPerSecond = channels * Math.ceil(bits / 8) * rate;
    } else if (ascii(b, at, "data")) {
      if (bytesPerSecond === 0) return null;
      // A size of 0 or 0xFFFFFFFF (a recorder that never came back to write it) means "to the end", as decoders read it.
      const left = b.length - body;
      const data = size === 0 || size === 0xffffffff || size > left ? left : size;
      return (data / bytesPerSecond) * 1000;
    }
    at = body + size + (size & 1);
  }
  return null;
}

/** STREAMINFO's total samples over its sample rate (0 samples: not known, so not read). */
function flac(b: Uint8Array): number | null {
  if (b.length < 26 || (b[4]! & 0x7f) !== 0) return null;
  const info = 8;
  const rate = (b[info + 10]! << 12) | (b[info + 11]! << 4) | (b[info + 12]! >> 4);
  const samples = (b[info + 13]! & 0x0f) * 2 ** 32 + u32be(b, info + 14);
  return rate === 0 || samples === 0 ? null : (samples / rate) * 1000;
}

const MP3_RATES = [
  [11025, 12000, 8000],
  [0, 0, 0],
  [22050, 24000, 16000],
  [44100, 48000, 32000],
];
// kbit/s by [MPEG-1?][layer I, II, III][index 1..14]
const MP3_BITRATES = [
  [
    [32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
    [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
    [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
  ],
  [
    [32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
    [32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
    [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  ],
];

/**
 * Every MPEG audio frame walked from the first to the end, each adding its own samples: the file's every byte must
 * be a tag (ID3v2 before, ID3v1 or APE after) or a frame, or it is not read.
 */
function mp3(b: Uint8Array): number | null {
  let at = 0;
  while (ascii(b, at, "ID3") && at + 10 <= b.length) {
    const size = ((b[at + 6]! & 0x7f) << 21) | ((b[at + 7]! & 0x7f) << 14) | ((b[at + 8]! & 0x7f) << 7) | b[at + 9]!;
    at += 10 + size + (b[at + 5]! & 0x10 ? 10 : 0);
  }
  while (at < b.length && b[at] === 0) at++; // padding a tag writer left
  let ms = 0;
  let frames = 0;
  while (at + 4 <= b.length) {
    const [h1, h2] = [b[at + 1]!, b[at + 2]!];
    if (b[at] !== 0xff || (h1 & 0xe0) !== 0xe0) {
      if ((ascii(b, at, "TAG") && b.length - at === 128) || ascii(b, at, "APETAGEX")) break;
      return null;
    }
    const version = (h1 >> 3) & 3; // 0: MPEG-2.5, 2: MPEG-2, 3: MPEG-1
    const layer = 4 - ((h1 >> 1) & 3); // 1, 2, 3 (4: reserved)
    const bitrateIndex = h2 >> 4;
    const rate = MP3_RATES[version]![(h2 >> 2) & 3] ?? 0;
    if (version === 1 || layer === 4 || bitrateIndex === 0 || bitrateIndex === 15 || rate === 0) return null;
    const mpeg1 = version === 3 ? 1 : 0;
    const bitrate = MP3_BITRATES[mpeg1]![layer - 1]![bitrateIndex - 1]! * 1000;
    const padding = (h2 >> 1) & 1;
    let samples = 1152;
    if (layer === 1) samples = 384;
    else if (layer === 3 && !mpeg1) samples = 576;
    const length =
      layer === 1
        ? (Math.floor((12 * bitrate) / rate) + padding) * 4
        : Math.floor(((samples / 8) * bitrate) / rate) + padding;
    ms += (samples / rate) * 1000;
    frames++;
    at += length;
  }
  return frames > 0 ? ms : null;
}

/** An Opus packet's duration (ms) from its first bytes (RFC 6716 §3.1), or its maximum when they are not there. */
function opusPacketMs(toc: number | undefined, second: number | undefined): number {
  if (toc === undefined) return 0;
  const config = toc >> 3;
  // SILK (configs 0–11), hybrid (12–15), CELT (16–31): frame sizes by config.
  let frame = [2.5, 5, 10, 20][config & 3]!;
  if (config < 12) frame = [10, 20, 40, 60][config & 3]!;
  else if (config < 16) frame = [10, 20][config & 1]!;
  const code = toc & 3;
  if (code === 3) return second === undefined ? 120 : Math.min(120, frame * (second & 0x3f));
  return code === 0 ? frame : frame * 2;
}

/**
 * Every page walked (they must reach the end). Opus: each audio packet's own duration; Vorbis: the last granule
 * position over the sample rate.
 */
function ogg(b: Uint8Array): number | null {
  let codec: "opus" | "vorbis" | null = null;
  let serial = -1;
  let rate = 0;
  let packet = 0; // packets of the first stream begun so far
  let packetStart = true;
  let opusMs = 0;
  let granule = 0;
  let at = 0;
  while (at < b.length) {
    if (at + 27 > b.length || !ascii(b, at, "OggS")) return null;
    const segments = b[at + 26]!;
    let data = at + 27 + segments;
    if (data > b.length) return null;
    const mine = serial === -1 || u32le(b, at + 14) === serial;
    if (serial === -1) {
      serial = u32le(b, at + 14);
      if (ascii(b, data, "OpusHead")) [codec, rate] = ["opus", 48000];
      else if (b[data] === 1 && ascii(b, data + 1, "vorbis")) [codec, rate] = ["vorbis", u32le(b, data + 12)];
      else return null;
    }
    if (mine) {
      // All ones: no packet ends on this page.
      const none = u32le(b, at + 6) === 0xffffffff && u32le(b, at + 10) === 0xffffffff;
      if (!none) granule = Math.max(granule, u64le(b, at + 6));
      packetStart = (b[at + 5]! & 1) === 0 ? true : packetStart;
    }
    for (let s = 0; s < segments; s++) {
      const length = b[at + 27 + s]!;
      if (mine && packetStart && length > 0) {
        if (codec === "opus" && packet >= 2) opusMs += opusPacketMs(b[data], length > 1 ? b[data + 1] : undefined);
        packet++;
        packetStart = false;
      }
      if (mine && length < 255) packetStart = true;
      data += length;
    }
    at = data;
  }
  if (at !== b.length) return null;
  if (codec === "opus") return opusMs;
  return rate > 0 && granule > 0 ? (granule / rate) * 1000 : null;
}

/** An EBML variable-length integer at `at`: its value (null: all ones, "unknown") and its length. */
function vint(b: Uint8Array, at: number, keepMarker: boolean): [number | null, number] | null {
  const first = b[at];
  if (first === undefined || first === 0) return null;
  const length = Math.clz32(first) - 23;
  if (length > 8 || at + length > b.length) return null;
  let value = keepMarker ? first : first & (0xff >> length);
  let allOnes = value === 0xff >> length;
  for (let i = 1; i < length; i++) {
    value = value * 256 + b[at + i]!;
    allOnes &&= b[at + i] === 0xff;
  }
  return [allOnes && !keepMarker ? null : value, length];
}

const EBML = {
  segment: 0x18538067,
  cluster: 0x1f43b675,
  tracks: 0x1654ae6b,
  trackEntry: 0xae,
  info: 0x1549a966,
  blockGroup: 0xa0,
  timecodeScale: 0x2ad7b1,
  duration: 0x4489,
  codecId: 0x86,
  clusterTime: 0xe7,
  simpleBlock: 0xa3,
  block: 0xa1,
} as const;
const DESCEND = new Set<number>([EBML.segment, EBML.cluster, EBML.tracks, EBML.trackEntry, EBML.info, EBML.blockGroup]);

/**
 * WebM/Matroska, walked element by element (a recorder's Segment and Clusters may be of unknown size). Opus: every
 * block's frames by their own durations (a laced block at the 120 ms an Opus packet may last); another codec: the
 * later of the Info's Duration and the last block's time.
 */
function matroska(b: Uint8Array): number | null {
  let scale = 1_000_000; // ns per timestamp tick
  let declared = 0;
  let opus = false;
  let cluster = 0;
  let lastBlock = 0;
  let opusMs = 0;
  let at = 0;
  while (at < b.length) {
    const id = vint(b, at, true);
    if (!id) return null;
    const size = vint(b, at + id[1], false);
    if (!size) return null;
    const body = at + id[1] + size[1];
    const [element, length] = [id[0]!, size[0]];
    if (DESCEND.has(element)) {
      at = body;
      continue;
    }
    if (length === null) return null;
    const end = Math.min(body + length, b.length);
    const uint = () => {
      let v = 0;
      for (let i = body; i < end; i++) v = v * 256 + b[i]!;
      return v;
    };
    if (element === EBML.timecodeScale) scale = uint();
    else if (element === EBML.duration && length === 4)
      declared = new DataView(b.buffer, b.byteOffset + body, 4).getFloat32(0);
    else if (element === EBML.duration && length === 8)
      declared = new DataView(b.buffer, b.byteOffset + body, 8).getFloat64(0);
    else if (element === EBML.codecId) opus ||= ascii(b, body, "A_OPUS");
    else if (element === EBML.clusterTime) cluster = uint();
    else if (element === EBML.simpleBlock || element === EBML.block) {
      const track = vint(b, body, false);
      if (!track) return null;
      const head = body + track[1];
      const relative = ((b[head]! << 24) >> 16) | b[head + 1]!; // signed 16 bits
      lastBlock = Math.max(lastBlock, cluster + relative);
      const lacing = (b[head + 2]! >> 1) & 3;
      opusMs += lacing === 0 ? opusPacketMs(b[head + 3], b[head + 4]) : (b[head + 3]! + 1) * 120;
    }
    at = body + length;
  }
  if (opus) return opusMs;
  return (Math.max(declared, lastBlock) * scale) / 1e6;
}

/** Boxes whose children are read. */
const MP4_PARENTS = new Set(["moov", "trak", "mdia", "minf", "stbl"]);

/** MP4/M4A: each sound track's sample table (stts: samples × their duration) over its timescale; the longest. */
function mp4(b: Uint8Array): number | null {
  let longest: number | null = null;
  let track = { timescale: 0, sound: false, ticks: 0 };
  const walk = (from: number, to: number): boolean => {
    for (let at = from; at + 8 <= to; ) {
      let size = u32be(b, at);
      let header = 8;
      if (size === 1) [size, header] = [u64be(b, at + 8), 16];
      else if (size === 0) size = to - at;
      const kind = type(at);
      if (size < header) return false;
      // Only the media data may run past its end (a file cut short); a table cut short is not read.
      if (at + size > to) return kind === "mdat";
      const body = at + header;
      if (kind === "trak") {
        track = { timescale: 0, sound: false, ticks: 0 };
        if (!walk(body, at + size)) return false;
        if (track.sound && track.timescale > 0)
          longest = Math.max(longest ?? 0, (track.ticks / track.timescale) * 1000);
      } else if (MP4_PARENTS.has(kind)) {
        if (!walk(body, at + size)) return false;
      } else if (kind === "mdhd") track.timescale = u32be(b, body + (b[body] === 1 ? 20 : 12));
      else if (kind === "hdlr") track.sound = ascii(b, body + 8, "soun");
      else if (kind === "stts") {
        const entries = u32be(b, body + 4);
        if (body + 8 + entries * 8 > at + size) return false;
        for (let i = 0; i < entries; i++) track.ticks += u32be(b, body + 8 + i * 8) * u32be(b, body + 12 + i * 8);
      }
      at += size;
    }
    return true;
  };
  const type = (at: number) => String.fromCharCode(b[at + 4]!, b[at + 5]!, b[at + 6]!, b[at + 7]!);
  return walk(0, b.length) ? longest : null;
}
