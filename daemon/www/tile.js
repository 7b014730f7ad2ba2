// Tile blobs (docs/spec/navmesh-format.md §2) decoded in the page: the seventeen keys in
// order, format 3, bin lengths that agree with the counts, region ids in range, and the
// content hash checked (FNV-1a 64 over every byte but the last 14).
import { decode } from './msgpack.js';

const KEYS = ['format', 'tx', 'tz', 'layer', 'origin', 'tile_size', 'nvp', 'verts', 'polys',
  'neis', 'areas', 'flags', 'regs', 'dmeshes', 'dverts', 'dtris', 'hash'];
export const FORMAT = 3;
export const MAX_REGION = 0xfffe; // region ids are 1..MAX_REGION (§2 item 7)

// FNV-1a 64 in four 16-bit limbs (no BigInt in the loop: a tile is up to ~100 KiB).
export function fnv1a64(bytes, end) {
  let h0 = 0x2325, h1 = 0x8422, h2 = 0x9ce4, h3 = 0xcbf2; // 0xcbf29ce484222325
  for (let i = 0; i < end; i++) {
    h0 ^= bytes[i];
    // h * 0x100000001b3 = h * 0x1b3 + (h << 40)
    const a0 = h0 * 0x1b3, a1 = h1 * 0x1b3, a2 = h2 * 0x1b3, a3 = h3 * 0x1b3;
    let c = a0;
    const r0 = c & 0xffff; c = (c >>> 16) + a1;
    const r1 = c & 0xffff; c = (c >>> 16) + a2 + (h0 << 8);
    const r2 = c & 0xffff; c = (c >>> 16) + a3 + (h1 << 8);
    const r3 = c & 0xffff;
    h0 = r0; h1 = r1; h2 = r2; h3 = r3;
  }
  return (BigInt(h3) << 48n) | (BigInt(h2) << 32n) | (BigInt(h1) << 16n) | BigInt(h0);
}

// Little-endian typed arrays from a bin (copied: bins are not aligned in the reply).
function typed(b, Ctor, get, what) {
  const size = Ctor.BYTES_PER_ELEMENT;
  if (b.length % size) throw new Error(`tile: ${what} bin length ${b.length}`);
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const a = new Ctor(b.length / size);
  for (let i = 0; i < a.length; i++) a[i] = dv[get](size * i, true);
  return a;
}
const f32 = (b) => typed(b, Float32Array, 'getFloat32', 'float32');
const u16 = (b) => typed(b, Uint16Array, 'getUint16', 'uint16');
const u32 = (b) => typed(b, Uint32Array, 'getUint32', 'uint32');

export function decodeTile(blob) {
  const m = decode(blob);
  const keys = Object.keys(m);
  if (keys.join() !== KEYS.join()) throw new Error(`tile: keys ${keys.join()}`);
  if (m.format !== FORMAT) throw new Error(`tile: format ${m.format}, not ${FORMAT}`);
  const hash = typeof m.hash === 'bigint' ? m.hash : BigInt(m.hash);
  if (blob.length < 14 || fnv1a64(blob, blob.length - 14) !== hash) throw new Error('tile: hash mismatch');
  const t = {
    tx: m.tx, tz: m.tz, layer: m.layer, origin: m.origin, tileSize: m.tile_size, nvp: m.nvp,
    verts: f32(m.verts), polys: u16(m.polys), neis: u16(m.neis), areas: m.areas.slice(),
    flags: u16(m.flags), regs: u16(m.regs), dmeshes: u32(m.dmeshes), dverts: f32(m.dverts), dtris: m.dtris.slice(),
    hash,
  };
  t.npolys = t.areas.length;
  t.nverts = t.verts.length / 3;
  if (t.polys.length !== t.nvp * t.npolys || t.neis.length !== t.polys.length ||
      t.flags.length !== t.npolys || t.regs.length !== t.npolys || t.dmeshes.length !== 4 * t.npolys || t.dtris.length % 4)
    throw new Error('tile: bin lengths disagree with the counts');
  for (let p = 0; p < t.npolys; p++)
    if (t.regs[p] < 1 || t.regs[p] > MAX_REGION) throw new Error(`tile: polygon ${p} region ${t.regs[p]}`);
  return t;
}

// Number of used vertex slots of polygon p.
export function polyVerts(t, p) {
  let n = 0;
  while (n < t.nvp && t.polys[p * t.nvp + n] !== 0xffff) n++;
  return n;
}

// World position of detail vertex j of polygon p (navmesh-format.md §2 item 8).
export function detailVert(t, p, j, out) {
  const n = polyVerts(t, p);
  let src, i;
  if (j < n) { src = t.verts; i = t.polys[p * t.nvp + j]; }
  else { src = t.dverts; i = t.dmeshes[4 * p] + j - n; }
  out[0] = t.origin[0] + src[3 * i];
  out[1] = t.origin[1] + src[3 * i + 1];
  out[2] = t.origin[2] + src[3 * i + 2];
  return out;
}
