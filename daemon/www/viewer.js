// The onepath viewer (docs/viewer.md, docs/spec/http.md): every resident level of the
// daemon in 3D, kept in step with its edits by long polls of changes.since. Everything
// it draws comes from the tile blobs the daemon serves (decoded in tile.js); what it drew
// is reported on <body> as data- attributes, which the headless test reads.
import * as THREE from './three/build/three.module.js';
import { OrbitControls } from './three/examples/jsm/controls/OrbitControls.js';
import { encode, decode } from './msgpack.js';
import { decodeTile, polyVerts, detailVert } from './tile.js';

const $ = (id) => document.getElementById(id);
const body = document.body;
const NEI_PORTAL = 0x8000, NEI_SEAM = 0xc000;
const FLASH_MS = 1200;

// ===== RPC over POST /rpc (http.md §3) =====

let nextId = 1;
// A daemon with --token-file wants its token in every request (protocol.md §2.7): open the
// page as http://HOST:PORT/#token=TOKEN or /#LEVEL&token=TOKEN. A fragment is never sent to
// the server or logged; the page keeps the token in memory only and takes it out of the
// address bar (openLevel rewrites the fragment to #LEVEL), so a reload needs it again.
function fragment() {
  let level = '', tok = null;
  for (const part of location.hash.slice(1).split('&')) {
    if (part.startsWith('token=')) tok = decodeURIComponent(part.slice(6));
    else if (part && !level) level = decodeURIComponent(part);
  }
  return { level, token: tok };
}
const token = fragment().token;
async function rpc(method, params) {
  const req = { v: 1, id: nextId++, method, params: params || {} };
  if (token) req.token = token;
  const res = await fetch('rpc', {
    method: 'POST', headers: { 'Content-Type': 'application/msgpack' },
    body: encode(req),
  });
  const bytes = new Uint8Array(await res.arrayBuffer());
  let r;
  try { r = decode(bytes); } catch (e) { throw new Error(`HTTP ${res.status}: ${new TextDecoder().decode(bytes)}`); }
  if (!r.ok) {
    const e = new Error(`${r.error.name}: ${r.error.message}`);
    e.code = r.error.name;
    throw e;
  }
  return r.result;
}

function message(text, error) {
  $('message').textContent = text || '';
  $('message').className = error ? 'error' : 'muted';
  if (error) body.dataset.error = text;
}

// ===== colours =====

function areaColour(area) {
  if (area === 63) return new THREE.Color(0x3d9bc4);
  if (area === 0) return new THREE.Color(0x6b6b6b);
  return new THREE.Color().setHSL(((area * 47) % 360) / 360, 0.6, 0.55);
}
// Layers: hues far from the seams' magenta and the portals' yellow.
const LAYER_COLOURS = [0x3d9bc4, 0xe3913c, 0x6fbf55, 0x4fc1b0, 0xd9685b, 0x9b8fd6];
function layerColour(layer) { return new THREE.Color(LAYER_COLOURS[layer % LAYER_COLOURS.length]); }
// Regions: an id names a region of one tile cell (navmesh-format.md §2 item 7), so the
// colour is a function of (tx, tz, id): the same region has the same colour in every view
// and after every reload. A 21-bit hash picks 128 levels per channel (40..231, distinct
// after rounding), so two regions share a colour only when their hashes collide.
function regionHash(tx, tz, reg) {
  let h = Math.imul(tx | 0, 0x27d4eb2d) ^ Math.imul(tz | 0, 0x165667b1) ^ Math.imul(reg, 0x9e3779b1);
  h ^= h >>> 15; h = Math.imul(h, 0x85ebca6b); h ^= h >>> 13; h = Math.imul(h, 0xc2b2ae35); h ^= h >>> 16;
  return h >>> 0;
}
function regionColour(tx, tz, reg) {
  const h = regionHash(tx, tz, reg);
  const ch = (v) => (40 + Math.round(1.5 * (v & 127))) / 255;
  return new THREE.Color(ch(h), ch(h >>> 7), ch(h >>> 14));
}
function tileColour(tx, tz) {
  const h = (((tx * 73856093) ^ (tz * 19349663)) >>> 0) % 360;
  return new THREE.Color().setHSL(h / 360, 0.45, 0.5);
}

// ===== scene =====

const view = $('view');
const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
renderer.setPixelRatio(window.devicePixelRatio || 1);
renderer.localClippingEnabled = true;
view.appendChild(renderer.domElement);
const scene = new THREE.Scene();
scene.background = new THREE.Color(0x1b1f24);
const camera = new THREE.PerspectiveCamera(45, 1, 0.1, 20000);
const controls = new OrbitControls(camera, renderer.domElement);
controls.enableDamping = false;
controls.screenSpacePanning = true;
scene.add(new THREE.HemisphereLight(0xffffff, 0x303848, 0.75));
const sun = new THREE.DirectionalLight(0xffffff, 0.55);
sun.position.set(0.4, 1, 0.25);
scene.add(sun);

const gl = renderer.getContext();
const dbg = gl.getExtension('WEBGL_debug_renderer_info');
body.dataset.webgl = dbg ? gl.getParameter(dbg.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER);

// Clipping planes of the floor slider, shared by every material (updated in place).
const clipLow = new THREE.Plane(new THREE.Vector3(0, 1, 0), 1e9);
const clipHigh = new THREE.Plane(new THREE.Vector3(0, -1, 0), 1e9);
const clips = [clipLow, clipHigh];

const lineMats = {
  edge: new THREE.LineBasicMaterial({ color: 0x14202b, transparent: true, opacity: 0.55, clippingPlanes: clips }),
  wall: new THREE.LineBasicMaterial({ color: 0x0b0f14, clippingPlanes: clips }),
  portal: new THREE.LineBasicMaterial({ color: 0xffd23f, clippingPlanes: clips }),
  seam: new THREE.LineBasicMaterial({ color: 0xff4fd8, clippingPlanes: clips }),
  border: new THREE.LineBasicMaterial({ color: 0x7d8a96, transparent: true, opacity: 0.5, clippingPlanes: clips }),
};

function resize() {
  const w = view.clientWidth, h = view.clientHeight;
  renderer.setSize(w, h, false);
  camera.aspect = w / Math.max(1, h);
  camera.updateProjectionMatrix();
}
window.addEventListener('resize', resize);

// ===== level state =====

const state = {
  level: null, info: null, version: 0, center: [0, 0, 0], yRange: [0, 1], radius: 1,
  cells: new Map(), // "tx,tz" -> { hashes: string[], layers: [{ tile, group, surface, triPoly }] }
  swaps: 0, generation: 0, pathPoints: [], pathObjects: [], hoverMesh: null, volumes: null,
  colour: 'area', edit: false,
};

const root = new THREE.Group();
scene.add(root);

function local(x, y, z) { return [x - state.center[0], y - state.center[1], z - state.center[2]]; }

function polyColour(t, p) {
  if (state.colour === 'layer') return layerColour(t.layer);
  if (state.colour === 'tile') return tileColour(t.tx, t.tz);
  if (state.colour === 'region') return regionColour(t.tx, t.tz, t.regs[p]);
  return areaColour(t.areas[p]);
}

// Detail triangles of every polygon, shaded by height; edges, portals, seams, the border.
function buildLayer(t) {
  const group = new THREE.Group();
  const pos = [], col = [], triPoly = [];
  const fills = new Set(); // the polygons' base colours, before height shading
  const q = [0, 0, 0];
  const [y0, y1] = state.yRange;
  const span = Math.max(1e-6, y1 - y0);
  for (let p = 0; p < t.npolys; p++) {
    const base = polyColour(t, p);
    fills.add(base.getHexString());
    const tb = t.dmeshes[4 * p + 2], tn = t.dmeshes[4 * p + 3];
    for (let k = 0; k < tn; k++) {
      for (let c = 0; c < 3; c++) {
        detailVert(t, p, t.dtris[4 * (tb + k) + c], q);
        const l = local(q[0], q[1], q[2]);
        pos.push(l[0], l[1], l[2]);
        const shade = 0.55 + 0.45 * Math.min(1, Math.max(0, (q[1] - y0) / span));
        col.push(base.r * shade, base.g * shade, base.b * shade);
      }
      triPoly.push(p);
    }
  }
  const geo = new THREE.BufferGeometry();
  geo.setAttribute('position', new THREE.Float32BufferAttribute(pos, 3));
  geo.setAttribute('color', new THREE.Float32BufferAttribute(col, 3));
  geo.computeVertexNormals();
  const mat = new THREE.MeshLambertMaterial({
    vertexColors: THREE.VertexColors, side: THREE.DoubleSide, clippingPlanes: clips,
    polygonOffset: true, polygonOffsetFactor: 1, polygonOffsetUnits: 1, emissive: 0x000000,
  });
  const surface = new THREE.Mesh(geo, mat);
  surface.userData = { tile: t, triPoly };
  group.add(surface);

  // Polygon outlines: in-tile edges once, walls, portals and seams by kind. Lifted a little.
  const lift = 0.03;
  const segs = { edge: [], wall: [], portal: [], seam: [] };
  for (let p = 0; p < t.npolys; p++) {
    const n = polyVerts(t, p);
    for (let k = 0; k < n; k++) {
      const nei = t.neis[p * t.nvp + k];
      let kind;
      if ((nei & 0xc000) === NEI_SEAM) kind = 'seam';
      else if (nei & NEI_PORTAL) kind = 'portal';
      else if (nei === 0) kind = 'wall';
      else if (nei - 1 > p) kind = 'edge';
      else continue;
      const a = t.polys[p * t.nvp + k], b = t.polys[p * t.nvp + (k + 1) % n];
      for (const v of [a, b]) {
        const l = local(t.origin[0] + t.verts[3 * v], t.origin[1] + t.verts[3 * v + 1] + lift, t.origin[2] + t.verts[3 * v + 2]);
        segs[kind].push(l[0], l[1], l[2]);
      }
    }
  }
  for (const kind of Object.keys(segs)) {
    if (!segs[kind].length) continue;
    const g = new THREE.BufferGeometry();
    g.setAttribute('position', new THREE.Float32BufferAttribute(segs[kind], 3));
    const lines = new THREE.LineSegments(g, lineMats[kind]);
    lines.userData.kind = kind;
    group.add(lines);
  }
  // The tile's square at the layer's base height.
  const s = t.tileSize, oy = t.origin[1];
  const c = [[0, 0], [s, 0], [s, s], [0, s]];
  const border = [];
  for (let i = 0; i < 4; i++) {
    const a = c[i], b = c[(i + 1) % 4];
    border.push(...local(t.origin[0] + a[0], oy, t.origin[2] + a[1]), ...local(t.origin[0] + b[0], oy, t.origin[2] + b[1]));
  }
  const bg = new THREE.BufferGeometry();
  bg.setAttribute('position', new THREE.Float32BufferAttribute(border, 3));
  const bl = new THREE.LineSegments(bg, lineMats.border);
  bl.userData.kind = 'border';
  group.add(bl);
  applyToggles(group);
  const counts = { portal: segs.portal.length / 6, seam: segs.seam.length / 6 };
  return { tile: t, group, surface, triPoly, counts, fills };
}

function disposeGroup(g) {
  g.traverse((o) => {
    if (o.geometry) o.geometry.dispose();
    if (o.material && !Object.values(lineMats).includes(o.material)) o.material.dispose();
  });
  root.remove(g);
}

function applyToggles(group) {
  const on = { border: $('show-borders').checked, portal: $('show-portals').checked,
    seam: $('show-seams').checked, edge: $('show-edges').checked, wall: $('show-edges').checked };
  group.children.forEach((o) => { if (o.userData.kind) o.visible = on[o.userData.kind]; });
}

// Replaces cell (tx, tz) with the given layers ({layer, hash, blob}); flash marks a swap.
function setCell(tx, tz, layers, flash) {
  const key = `${tx},${tz}`;
  const old = state.cells.get(key);
  if (old) old.layers.forEach((l) => disposeGroup(l.group));
  state.cells.delete(key);
  if (!layers.length) return;
  const cell = { hashes: layers.map((l) => String(l.hash)), layers: [] };
  for (const l of layers) {
    const t = decodeTile(l.blob);
    const built = buildLayer(t);
    if (flash) {
      built.flashUntil = performance.now() + FLASH_MS;
      body.dataset.flashes = String(+(body.dataset.flashes || 0) + 1);
    }
    root.add(built.group);
    cell.layers.push(built);
  }
  state.cells.set(key, cell);
}

function clearLevel() {
  for (const c of state.cells.values()) c.layers.forEach((l) => disposeGroup(l.group));
  state.cells.clear();
  clearPath();
  clearHover();
  if (state.volumes) { disposeGroup(state.volumes); state.volumes = null; }
}

function report() {
  let layers = 0, polys = 0, tris = 0, portals = 0, seams = 0;
  const regions = new Set(), fills = new Set();
  for (const c of state.cells.values())
    for (const l of c.layers) {
      layers++; polys += l.tile.npolys; tris += l.triPoly.length;
      portals += l.counts.portal; seams += l.counts.seam;
      for (let p = 0; p < l.tile.npolys; p++) regions.add(`${l.tile.tx},${l.tile.tz},${l.tile.regs[p]}`);
      l.fills.forEach((f) => fills.add(f));
    }
  // What the fill shows: the colour mode, the regions drawn (tile cell and id) and the
  // distinct fill colours actually used (in region mode one per region, unless two
  // hashes collide).
  body.dataset.colour = state.colour;
  body.dataset.regions = String(regions.size);
  body.dataset.fills = String(fills.size);
  state.regionCount = regions.size;
  if (state.colour === 'region') legend();
  body.dataset.portals = String(portals);
  body.dataset.seams = String(seams);
  body.dataset.level = state.level || '';
  body.dataset.version = String(state.version);
  body.dataset.cells = String(state.cells.size);
  body.dataset.tiles = String(layers);
  body.dataset.polys = String(polys);
  body.dataset.tris = String(tris);
  body.dataset.swaps = String(state.swaps);
  const info = state.info;
  const rows = [['version', state.version], ['tile cells', state.cells.size], ['tile layers', layers],
    ['polygons', polys], ['detail triangles', tris]];
  if (info) rows.push(['tile range', `${info.tiles[0]}..${info.tiles[2]} × ${info.tiles[1]}..${info.tiles[3]}`]);
  $('level-stats').innerHTML = rows.map(([k, v]) => `<div><span>${k}</span><span>${v}</span></div>`).join('');
}

// ===== volumes (level.info `volumes`, protocol.md §3.5) =====

function volumeMesh(v) {
  let geo;
  if (v.kind === 'box') {
    const [a, b] = [v.bmin, v.bmax];
    geo = new THREE.BoxGeometry(b[0] - a[0], b[1] - a[1], b[2] - a[2]);
    const c = local((a[0] + b[0]) / 2, (a[1] + b[1]) / 2, (a[2] + b[2]) / 2);
    geo.translate(c[0], c[1], c[2]);
  } else if (v.kind === 'cylinder') {
    geo = new THREE.CylinderGeometry(v.radius, v.radius, v.y[1] - v.y[0], 32);
    const c = local(v.center[0], (v.y[0] + v.y[1]) / 2, v.center[1]);
    geo.translate(c[0], c[1], c[2]);
  } else if (v.kind === 'prism') {
    const pts = v.points, n = pts.length, pos = [];
    const P = (i, y) => local(pts[i % n][0], y, pts[i % n][1]);
    for (let i = 1; i + 1 < n; i++) {
      pos.push(...P(0, v.y[1]), ...P(i, v.y[1]), ...P(i + 1, v.y[1]));
      pos.push(...P(0, v.y[0]), ...P(i + 1, v.y[0]), ...P(i, v.y[0]));
    }
    for (let i = 0; i < n; i++) {
      pos.push(...P(i, v.y[0]), ...P(i + 1, v.y[0]), ...P(i + 1, v.y[1]));
      pos.push(...P(i, v.y[0]), ...P(i + 1, v.y[1]), ...P(i, v.y[1]));
    }
    geo = new THREE.BufferGeometry();
    geo.setAttribute('position', new THREE.Float32BufferAttribute(pos, 3));
  } else {
    return null;
  }
  const colour = v.mode === 'obstacle' ? new THREE.Color(0xff5040) : areaColour(v.area);
  const g = new THREE.Group();
  g.add(new THREE.Mesh(geo, new THREE.MeshBasicMaterial({ color: colour, transparent: true, opacity: 0.2,
    depthWrite: false, side: THREE.DoubleSide, clippingPlanes: clips })));
  g.add(new THREE.LineSegments(new THREE.EdgesGeometry(geo, 20), new THREE.LineBasicMaterial({ color: colour, clippingPlanes: clips })));
  return g;
}

function drawVolumes(list) {
  if (state.volumes) disposeGroup(state.volumes);
  state.volumes = new THREE.Group();
  state.volumes.visible = $('show-volumes').checked;
  (list || []).forEach((v) => { const m = volumeMesh(v); if (m) state.volumes.add(m); });
  root.add(state.volumes);
  body.dataset.volumes = String((list || []).length);
  const ul = $('volumes');
  ul.innerHTML = '';
  for (const v of list || []) {
    const li = document.createElement('li');
    li.textContent = `${v.name} · ${v.mode}${v.mode === 'area' ? ' ' + v.area : ''} · ${v.kind}`;
    if (state.edit) {
      const b = document.createElement('button');
      b.textContent = 'drop';
      b.onclick = () => rpc('volume.drop', { level: state.level, name: v.name }).catch((e) => message(e.message, true));
      li.appendChild(b);
    }
    ul.appendChild(li);
  }
  if (!(list || []).length) ul.innerHTML = '<li class="muted">none</li>';
}

// ===== loading and live updates =====

async function loadTiles(level, info, gen) {
  const [tx0, tz0, tx1, tz1] = info.tiles;
  if (tx0 > tx1) return;
  let after = null;
  do {
    const r = await rpc('tile.range', { level, tx0, tz0, tx1, tz1, after, max_bytes: 4 << 20 });
    if (gen !== state.generation) return;
    for (const t of r.tiles) setCell(t.tx, t.tz, t.layers, false);
    after = r.next;
    report();
  } while (after);
}

async function openLevel(level) {
  const gen = ++state.generation;
  clearLevel();
  state.level = level;
  body.dataset.ready = '0';
  $('level-panel').hidden = false;
  $('level-name').textContent = level;
  document.querySelectorAll('#levels li').forEach((li) => li.classList.toggle('open', li.dataset.level === level));
  if (location.hash.slice(1) !== level) history.replaceState(null, '', '#' + level);
  try {
    const info = await rpc('level.info', { level });
    if (gen !== state.generation) return;
    state.info = info;
    state.version = info.version;
    const b = info.bounds;
    state.center = [(b[0] + b[3]) / 2, b[1], (b[2] + b[5]) / 2];
    state.yRange = [b[1], Math.max(b[4], b[1] + 1e-3)];
    state.radius = Math.max(0.5 * Math.hypot(b[3] - b[0], b[4] - b[1], b[5] - b[2]), 1);
    setupSlider();
    frame(b);
    drawVolumes(info.volumes);
    message(`loading ${info.tiles_total} tiles…`);
    await loadTiles(level, info, gen);
    if (gen !== state.generation) return;
    message('');
    report();
    body.dataset.ready = '1';
    poll(level, gen);
  } catch (e) {
    message(e.message, true);
  }
}

async function poll(level, gen) {
  while (gen === state.generation) {
    let r;
    try {
      r = await rpc('changes.since', { level, version: state.version, wait_ms: 20000 });
    } catch (e) {
      if (gen !== state.generation) return;
      message(`${e.message}; retrying`, true);
      await new Promise((ok) => setTimeout(ok, 2000));
      if (e.code === 'OP_ERANGE' || e.code === 'OP_ENOTFOUND') { refreshLevels(); return openLevel(level); }
      continue;
    }
    if (gen !== state.generation) return;
    for (const c of r.tiles) {
      const cell = state.cells.get(`${c.tx},${c.tz}`);
      const now = c.hashes.map(String).join();
      if (cell && cell.hashes.join() === now) continue;
      if (!cell && !c.hashes.length) continue;
      const t = c.hashes.length ? await rpc('tile.get', { level, tx: c.tx, tz: c.tz }) : { layers: [] };
      if (gen !== state.generation) return;
      setCell(c.tx, c.tz, t.layers, true);
      state.swaps++;
      body.dataset.lastSwap = `${c.tx},${c.tz}@${r.version}`;
    }
    if (r.version !== state.version) {
      state.version = r.version;
      try {
        const info = await rpc('level.info', { level });
        if (gen !== state.generation) return;
        state.info = info;
        drawVolumes(info.volumes);
      } catch (e) { /* the next poll says why */ }
    }
    report();
  }
}

async function refreshLevels() {
  try {
    const r = await rpc('level.list', {});
    const ul = $('levels');
    ul.innerHTML = '';
    for (const l of r.levels) {
      const li = document.createElement('li');
      li.dataset.level = l.level;
      li.innerHTML = `<span></span><span class="v">v${l.version}</span>`;
      li.firstChild.textContent = l.level;
      li.onclick = () => openLevel(l.level);
      li.classList.toggle('open', l.level === state.level);
      ul.appendChild(li);
    }
    if (!r.levels.length) ul.innerHTML = '<li class="muted">no level is resident</li>';
    body.dataset.levels = String(r.levels.length);
    return r.levels;
  } catch (e) {
    message(e.message, true);
    return [];
  }
}

// ===== camera and floors =====

function frame(b) {
  // Back off along a fixed view direction until the bounds' sphere fits the view.
  const r = Math.max(0.5 * Math.hypot(b[3] - b[0], b[4] - b[1], b[5] - b[2]), 1);
  const c = local((b[0] + b[3]) / 2, (b[1] + b[4]) / 2, (b[2] + b[5]) / 2);
  const fov = (camera.fov * Math.PI / 180) / 2;
  const dist = r / Math.sin(Math.min(fov, Math.atan(Math.tan(fov) * camera.aspect))) * 1.02;
  const dir = new THREE.Vector3(0.5, 0.75, 0.45).normalize();
  controls.target.set(c[0], c[1], c[2]);
  camera.position.set(c[0] + dir.x * dist, c[1] + dir.y * dist, c[2] + dir.z * dist);
  camera.near = r / 500;
  camera.far = r * 40;
  camera.updateProjectionMatrix();
  controls.update();
}

function setupSlider() {
  const [y0, y1] = state.yRange;
  $('ymin').value = 0;
  $('ymax').value = 1000;
  applySlider();
  $('yrange').textContent = `${y0.toFixed(2)} .. ${y1.toFixed(2)}`;
}

function applySlider() {
  const [y0, y1] = state.yRange;
  const lo = y0 + (y1 - y0) * ($('ymin').value / 1000) - 0.05;
  const hi = y0 + (y1 - y0) * ($('ymax').value / 1000) + 0.05;
  // Plane: n·p + c >= 0 is kept; in the scene's frame (y - center y).
  clipLow.constant = -(lo - state.center[1]);
  clipHigh.constant = hi - state.center[1];
  $('yrange').textContent = `${lo.toFixed(2)} .. ${hi.toFixed(2)}`;
  body.dataset.yRange = `${lo},${hi}`;
}
$('ymin').oninput = () => { if (+$('ymin').value > +$('ymax').value) $('ymax').value = $('ymin').value; applySlider(); };
$('ymax').oninput = () => { if (+$('ymax').value < +$('ymin').value) $('ymin').value = $('ymax').value; applySlider(); };

function inFloors(yScene) {
  return yScene >= -clipLow.constant - 1e-6 && yScene <= clipHigh.constant + 1e-6;
}

// ===== picking, hover and paths =====

const raycaster = new THREE.Raycaster();
function pick(clientX, clientY) {
  const r = renderer.domElement.getBoundingClientRect();
  const ndc = new THREE.Vector2(((clientX - r.left) / r.width) * 2 - 1, -((clientY - r.top) / r.height) * 2 + 1);
  raycaster.setFromCamera(ndc, camera);
  const surfaces = [];
  for (const c of state.cells.values()) for (const l of c.layers) surfaces.push(l.surface);
  for (const hit of raycaster.intersectObjects(surfaces, false)) {
    if (!inFloors(hit.point.y)) continue;
    const ud = hit.object.userData;
    const p = ud.triPoly[hit.faceIndex];
    const world = [hit.point.x + state.center[0], hit.point.y + state.center[1], hit.point.z + state.center[2]];
    return { tile: ud.tile, poly: p, world };
  }
  return null;
}

function polyOverlay(t, p, colour, opacity) {
  const pos = [];
  const q = [0, 0, 0];
  const tb = t.dmeshes[4 * p + 2], tn = t.dmeshes[4 * p + 3];
  for (let k = 0; k < tn; k++)
    for (let c = 0; c < 3; c++) {
      detailVert(t, p, t.dtris[4 * (tb + k) + c], q);
      pos.push(...local(q[0], q[1] + 0.05, q[2]));
    }
  const g = new THREE.BufferGeometry();
  g.setAttribute('position', new THREE.Float32BufferAttribute(pos, 3));
  return new THREE.Mesh(g, new THREE.MeshBasicMaterial({ color: colour, transparent: true, opacity,
    side: THREE.DoubleSide, depthWrite: false, clippingPlanes: clips }));
}

function clearHover() {
  if (state.hoverMesh) { disposeGroup(state.hoverMesh); state.hoverMesh = null; }
}

function hover(h) {
  clearHover();
  if (!h) {
    $('hover-info').innerHTML = 'hover the mesh';
    delete body.dataset.hover;
    return;
  }
  const t = h.tile, p = h.poly;
  state.hoverMesh = polyOverlay(t, p, 0xffffff, 0.35);
  root.add(state.hoverMesh);
  const info = { tx: t.tx, tz: t.tz, layer: t.layer, poly: p, area: t.areas[p], flags: t.flags[p], region: t.regs[p] };
  body.dataset.hover = JSON.stringify(info);
  const w = h.world.map((x) => x.toFixed(2)).join(', ');
  $('hover-info').innerHTML = [['tile', `(${t.tx}, ${t.tz})`], ['layer', t.layer], ['polygon', p],
    ['area', t.areas[p]], ['region', `${t.regs[p]} of tile (${t.tx}, ${t.tz})`],
    ['flags', '0x' + t.flags[p].toString(16).padStart(4, '0')], ['at', w]]
    .map(([k, v]) => `<div><span>${k}</span><span>${v}</span></div>`).join('');
}

function clearPath() {
  state.pathObjects.forEach(disposeGroup);
  state.pathObjects = [];
}

// Markers and the path line scale with the level, so they read at any zoom.
function markSize() { return Math.max(0.25, state.radius / 120); }

function marker(world, colour) {
  const r = markSize();
  const m = new THREE.Mesh(new THREE.SphereGeometry(r, 16, 12), new THREE.MeshBasicMaterial({ color: colour }));
  m.position.set(...local(world[0], world[1] + r, world[2]));
  root.add(m);
  state.pathObjects.push(m);
}

function tileOf(tx, tz, layer) {
  const c = state.cells.get(`${tx},${tz}`);
  return c && c.layers.find((l) => l.tile.layer === layer);
}

async function findPath(from, to) {
  clearPath();
  marker(from, 0x40ff80);
  marker(to, 0xff6060);
  body.dataset.pathFrom = from.join(',');
  body.dataset.pathTo = to.join(',');
  body.dataset.pathState = 'pending';
  try {
    const r = await rpc('path', { level: state.level, from, to });
    for (const c of r.corridor) {
      const l = tileOf(c.tx, c.tz, c.layer);
      if (l) { const o = polyOverlay(l.tile, c.poly, 0xffa040, 0.45); root.add(o); state.pathObjects.push(o); }
    }
    // The straight path as a tube of segments (WebGL lines are one pixel wide).
    const w = markSize() * 0.35;
    const pts = r.straight.map((s) => new THREE.Vector3(...local(s.pos[0], s.pos[1] + w * 2, s.pos[2])));
    const tubeMat = new THREE.MeshBasicMaterial({ color: 0xffffff });
    for (let i = 1; i < pts.length; i++) {
      const a = pts[i - 1], b = pts[i], len = a.distanceTo(b);
      if (len < 1e-6) continue;
      const seg = new THREE.Mesh(new THREE.CylinderGeometry(w, w, len, 8), tubeMat);
      seg.position.copy(a).add(b).multiplyScalar(0.5);
      seg.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0), b.clone().sub(a).normalize());
      root.add(seg);
      state.pathObjects.push(seg);
    }
    pts.forEach((p) => {
      const d = new THREE.Mesh(new THREE.SphereGeometry(w * 1.8, 10, 8), tubeMat);
      d.position.copy(p);
      root.add(d);
      state.pathObjects.push(d);
    });
    body.dataset.pathCorridor = JSON.stringify(r.corridor.map((c) => [c.tx, c.tz, c.layer, c.poly]));
    body.dataset.pathStraight = JSON.stringify(r.straight.map((s) => s.pos));
    body.dataset.pathLength = String(r.length);
    body.dataset.pathState = r.partial ? 'partial' : 'complete';
    $('path-info').innerHTML = [['length', r.length.toFixed(2)], ['cost', r.cost.toFixed(2)],
      ['polygons', r.corridor.length], ['points', r.straight.length], ['reached', r.partial ? 'no (partial)' : 'yes']]
      .map(([k, v]) => `<div><span>${k}</span><span>${v}</span></div>`).join('');
  } catch (e) {
    body.dataset.pathState = 'error';
    $('path-info').textContent = e.message;
  }
}

function clickAt(clientX, clientY) {
  const h = pick(clientX, clientY);
  if (!h) return;
  if (state.pathPoints.length >= 2) state.pathPoints = [];
  state.pathPoints.push(h.world);
  if (state.pathPoints.length === 1) { clearPath(); marker(h.world, 0x40ff80); body.dataset.pathState = 'one point'; }
  else findPath(state.pathPoints[0], state.pathPoints[1]);
}

let down = null, hoverAt = null;
renderer.domElement.addEventListener('pointerdown', (e) => { down = [e.clientX, e.clientY, e.button]; });
renderer.domElement.addEventListener('pointerup', (e) => {
  if (down && down[2] === 0 && Math.hypot(e.clientX - down[0], e.clientY - down[1]) < 5) clickAt(e.clientX, e.clientY);
  down = null;
});
renderer.domElement.addEventListener('pointermove', (e) => { hoverAt = [e.clientX, e.clientY]; });
renderer.domElement.addEventListener('pointerleave', () => { hoverAt = null; hover(null); });

// ===== controls of the panel =====

$('colour').onchange = () => {
  state.colour = $('colour').value;
  for (const [key, c] of state.cells) {
    const [tx, tz] = key.split(',').map(Number);
    const layers = c.layers.map((l) => l.tile);
    c.layers.forEach((l) => disposeGroup(l.group));
    c.layers = layers.map((t) => { const b = buildLayer(t); root.add(b.group); return b; });
    state.cells.set(key, c);
    void tx; void tz;
  }
  report();
  legend();
};
for (const id of ['show-borders', 'show-portals', 'show-seams', 'show-edges'])
  $(id).onchange = () => { for (const c of state.cells.values()) c.layers.forEach((l) => applyToggles(l.group)); };
$('show-volumes').onchange = () => { if (state.volumes) state.volumes.visible = $('show-volumes').checked; };

function parsePoint(s) {
  const v = s.split(',').map(Number);
  if (v.length !== 3 || v.some((x) => !Number.isFinite(x))) throw new Error(`'${s}' is not x,y,z`);
  return v;
}
$('volume-form').onsubmit = (e) => {
  e.preventDefault();
  try {
    const mode = $('vf-mode').value;
    const volume = { name: $('vf-name').value, mode, kind: 'box', bmin: parsePoint($('vf-bmin').value), bmax: parsePoint($('vf-bmax').value) };
    if (mode === 'area') volume.area = +$('vf-area').value;
    rpc('volume.put', { level: state.level, volume }).then(() => message('volume put'), (err) => message(err.message, true));
  } catch (err) { message(err.message, true); }
};

function legend() {
  if (state.colour === 'region') {
    // No fixed key can list every region: say what a colour means, and count them.
    const n = state.regionCount || 0;
    $('legend').innerHTML = '<div>one colour = one region of one tile cell</div>' +
      `<div>${n} regions drawn</div>` +
      '<div class="muted">ids restart in every tile; hover a polygon for its region</div>' +
      [['portal', new THREE.Color(0xffd23f)], ['layer seam', new THREE.Color(0xff4fd8)]]
        .map(([k, c]) => `<div><span class="sw" style="background:#${c.getHexString()}"></span>${k}</div>`).join('');
    return;
  }
  const items = state.colour === 'area'
    ? [['walkable (63)', areaColour(63)], ['area 1..62', areaColour(5)], ['portal', new THREE.Color(0xffd23f)],
      ['layer seam', new THREE.Color(0xff4fd8)], ['obstacle volume', new THREE.Color(0xff5040)]]
    : [...(state.colour === 'layer' ? [0, 1, 2].map((l) => [`layer ${l}`, layerColour(l)]) : []),
      ['portal', new THREE.Color(0xffd23f)], ['layer seam', new THREE.Color(0xff4fd8)]];
  $('legend').innerHTML = items.map(([k, c]) => `<div><span class="sw" style="background:#${c.getHexString()}"></span>${k}</div>`).join('');
}

// ===== the loop =====

function animate(now) {
  requestAnimationFrame(animate);
  if (hoverAt) { hover(pick(hoverAt[0], hoverAt[1])); hoverAt = null; }
  for (const c of state.cells.values())
    for (const l of c.layers)
      if (l.flashUntil) {
        const left = l.flashUntil - now;
        const m = l.surface.material;
        if (left <= 0) { m.emissive.setRGB(0, 0, 0); l.flashUntil = 0; }
        else m.emissive.setRGB(0.9 * left / FLASH_MS, 0.75 * left / FLASH_MS, 0.2 * left / FLASH_MS);
      }
  renderer.render(scene, camera);
}

// What the headless test drives (tests/viewer/test_viewer.py).
window.viewer = {
  // The volumes drawn: [kind, mode, translucent surface?, vertex count of its outline].
  volumes() {
    return state.volumes ? state.volumes.children.map((g) => [g.children[0].material.transparent,
      g.children[0].material.opacity, g.children[1].geometry.attributes.position.count]) : [];
  },
  screenOf(x, y, z) {
    const v = new THREE.Vector3(...local(x, y, z)).project(camera);
    const r = renderer.domElement.getBoundingClientRect();
    return [r.left + (v.x + 1) / 2 * r.width, r.top + (1 - v.y) / 2 * r.height];
  },
  pick(x, y) { const h = pick(x, y); return h && { world: h.world, tx: h.tile.tx, tz: h.tile.tz, layer: h.tile.layer, poly: h.poly }; },
  polyCentre(tx, tz, layer, p) {
    const l = tileOf(tx, tz, layer);
    if (!l) return null;
    const t = l.tile, n = polyVerts(t, p), c = [0, 0, 0];
    for (let k = 0; k < n; k++) { const v = t.polys[p * t.nvp + k]; for (let i = 0; i < 3; i++) c[i] += t.origin[i] + t.verts[3 * v + i]; }
    return c.map((x) => x / n);
  },
  cells() { return [...state.cells.entries()].map(([k, c]) => [k, c.layers.map((l) => [l.tile.layer, l.tile.npolys, String(l.tile.hash)])]); },
  view(yawDeg, pitchDeg, distScale) {
    const off = camera.position.clone().sub(controls.target);
    const d = off.length() * (distScale || 1);
    const yaw = yawDeg * Math.PI / 180, pitch = pitchDeg * Math.PI / 180;
    camera.position.set(controls.target.x + d * Math.cos(pitch) * Math.sin(yaw), controls.target.y + d * Math.sin(pitch),
      controls.target.z + d * Math.cos(pitch) * Math.cos(yaw));
    controls.update();
  },
  floors(lo, hi) { $('ymin').value = lo; $('ymax').value = hi; applySlider(); },
};

async function start() {
  resize();
  legend();
  requestAnimationFrame(animate);
  try {
    const cfg = await (await fetch('viewer.json')).json();
    state.edit = cfg.edit;
    $('volume-form').hidden = !cfg.edit;
    body.dataset.edit = String(cfg.edit);
  } catch (e) { message(`viewer.json: ${e.message}`, true); }
  const levels = await refreshLevels();
  const want = fragment().level;
  const first = levels.find((l) => l.level === want) || levels[0];
  if (first) openLevel(first.level);
  setInterval(refreshLevels, 5000);
}
window.addEventListener('hashchange', () => { const l = fragment().level; if (l && l !== state.level) openLevel(l); });
start();
