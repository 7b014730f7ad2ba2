// msgpack for the viewer (docs/spec/http.md §3): the requests it sends (maps, strings,
// numbers, arrays, booleans) and every value a reply may hold. Integers beyond 2^53 (tile
// hashes) decode as BigInt; bin decodes as a Uint8Array view of the reply's bytes.

export function encode(value) {
  const out = [];
  const u8 = (b) => out.push(b & 0xff);
  const be = (v, n) => { for (let i = n - 1; i >= 0; i--) u8(Number((BigInt(v) >> BigInt(8 * i)) & 0xffn)); };
  const str = (s) => {
    const b = new TextEncoder().encode(s);
    if (b.length < 32) u8(0xa0 | b.length);
    else if (b.length < 256) { u8(0xd9); u8(b.length); }
    else if (b.length < 65536) { u8(0xda); be(b.length, 2); }
    else { u8(0xdb); be(b.length, 4); }
    for (const x of b) u8(x);
  };
  const walk = (v) => {
    if (v === null || v === undefined) u8(0xc0);
    else if (v === true) u8(0xc3);
    else if (v === false) u8(0xc2);
    else if (typeof v === 'bigint') { u8(v < 0n ? 0xd3 : 0xcf); be(BigInt.asUintN(64, v), 8); }
    else if (typeof v === 'number') {
      if (Number.isInteger(v) && Math.abs(v) <= Number.MAX_SAFE_INTEGER) {
        if (v >= 0 && v < 128) u8(v);
        else if (v < 0 && v >= -32) u8(0xe0 | (v + 32));
        else if (v >= 0) { u8(0xcf); be(v, 8); }
        else { u8(0xd3); be(BigInt.asUintN(64, BigInt(v)), 8); }
      } else {
        u8(0xcb);
        const dv = new DataView(new ArrayBuffer(8));
        dv.setFloat64(0, v);
        for (let i = 0; i < 8; i++) u8(dv.getUint8(i));
      }
    } else if (typeof v === 'string') str(v);
    else if (v instanceof Uint8Array) {
      if (v.length < 256) { u8(0xc4); u8(v.length); } else { u8(0xc6); be(v.length, 4); }
      for (const x of v) u8(x);
    } else if (Array.isArray(v)) {
      if (v.length < 16) u8(0x90 | v.length); else { u8(0xdd); be(v.length, 4); }
      v.forEach(walk);
    } else {
      const keys = Object.keys(v).filter((k) => v[k] !== undefined);
      if (keys.length < 16) u8(0x80 | keys.length); else { u8(0xdf); be(keys.length, 4); }
      for (const k of keys) { str(k); walk(v[k]); }
    }
  };
  walk(value);
  return new Uint8Array(out);
}

// Decodes one value from bytes (a Uint8Array); throws on anything malformed or truncated.
export function decode(bytes) {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const need = (n) => { if (at + n > bytes.length) throw new Error(`msgpack: truncated at ${at}`); };
  const u = (n) => {
    need(n);
    let v;
    if (n === 1) v = dv.getUint8(at);
    else if (n === 2) v = dv.getUint16(at);
    else if (n === 4) v = dv.getUint32(at);
    else { const b = dv.getBigUint64(at); v = b <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(b) : b; }
    at += n;
    return v;
  };
  const s = (n) => {
    const b = u(n);
    need(b);
    const t = new TextDecoder().decode(bytes.subarray(at, at + b));
    at += b;
    return t;
  };
  const bin = (n) => {
    const b = u(n);
    need(b);
    const v = bytes.subarray(at, at + b);
    at += b;
    return v;
  };
  const arr = (n) => { const a = new Array(n); for (let i = 0; i < n; i++) a[i] = value(); return a; };
  const map = (n) => {
    const o = {};
    for (let i = 0; i < n; i++) { const k = value(); o[k] = value(); }
    return o;
  };
  const value = () => {
    need(1);
    const t = dv.getUint8(at++);
    if (t < 0x80) return t;
    if (t >= 0xe0) return t - 0x100;
    if ((t & 0xf0) === 0x80) return map(t & 0x0f);
    if ((t & 0xf0) === 0x90) return arr(t & 0x0f);
    if ((t & 0xe0) === 0xa0) {
      const n = t & 0x1f;
      need(n);
      const r = new TextDecoder().decode(bytes.subarray(at, at + n));
      at += n;
      return r;
    }
    switch (t) {
      case 0xc0: return null;
      case 0xc2: return false;
      case 0xc3: return true;
      case 0xc4: return bin(1);
      case 0xc5: return bin(2);
      case 0xc6: return bin(4);
      case 0xca: { need(4); const v = dv.getFloat32(at); at += 4; return v; }
      case 0xcb: { need(8); const v = dv.getFloat64(at); at += 8; return v; }
      case 0xcc: return u(1);
      case 0xcd: return u(2);
      case 0xce: return u(4);
      case 0xcf: return u(8);
      case 0xd0: { need(1); const v = dv.getInt8(at); at += 1; return v; }
      case 0xd1: { need(2); const v = dv.getInt16(at); at += 2; return v; }
      case 0xd2: { need(4); const v = dv.getInt32(at); at += 4; return v; }
      case 0xd3: { need(8); const b = dv.getBigInt64(at); at += 8; return (b >= BigInt(Number.MIN_SAFE_INTEGER) && b <= BigInt(Number.MAX_SAFE_INTEGER)) ? Number(b) : b; }
      case 0xd9: return s(1);
      case 0xda: return s(2);
      case 0xdb: return s(4);
      case 0xdc: return arr(u(2));
      case 0xdd: return arr(u(4));
      case 0xde: return map(u(2));
      case 0xdf: return map(u(4));
      default: throw new Error(`msgpack: type 0x${t.toString(16)} at ${at - 1} is not used by the protocol`);
    }
  };
  const v = value();
  if (at !== bytes.length) throw new Error(`msgpack: ${bytes.length - at} trailing bytes`);
  return v;
}
