#pragma once
/// \file io/detail/html_report_script_model.hpp
/// The first part of the report page's script (see html_report_assets.hpp): number text, the
/// schedule read from the page's data (actions, colours, memory curves) and the dependency
/// model (what each action waited for, critical paths). The view part follows it in the page.

#include <string_view>

namespace ppsched::detail::html {

/// The script's model: numbers, data, dependencies.
inline constexpr std::string_view script_model = R"js('use strict';
(function () {
const t_begin = performance.now();
const DATA = JSON.parse(document.getElementById('ppsched-data').textContent);
const CODES = ['F', 'I', 'W', 'B', 'OVERLAP_F_B', 'UNSHARD', 'RESHARD', 'SEND_F', 'RECV_F',
  'SEND_B', 'RECV_B', 'REDUCE_GRAD'];
const NAMES = ['forward', 'backward input', 'backward weight', 'full backward', 'overlapped F+B',
  'UNSHARD', 'RESHARD', 'SEND (forward)', 'RECV (forward)', 'SEND (backward)', 'RECV (backward)',
  'REDUCE_GRAD'];
const K_F = 0, K_I = 1, K_W = 2, K_B = 3, K_O = 4, K_SF = 7, K_RF = 8, K_SB = 9, K_RB = 10;
const BASE = [[0x4c, 0x78, 0xa8], [0xf5, 0x85, 0x18], [0x54, 0xa2, 0x4b], [0xe4, 0x57, 0x56],
  [0x8e, 0x5a, 0x9e], [0x3a, 0x9c, 0x96], [0x9f, 0xd4, 0xcf], [0x44, 0x44, 0x44],
  [0xbb, 0xbb, 0xbb], [0x44, 0x44, 0x44], [0xbb, 0xbb, 0xbb], [0xe0, 0xb1, 0x2a]];
const IDLE = [0xec, 0xec, 0xec];
const lane_of = k => k <= K_O ? 0 : (k >= K_SF && k <= K_RB) ? 1 : 2;

// ---- numbers -------------------------------------------------------------------------------
function fmt(v, digits) {
  if (v === null || v === undefined || !isFinite(v)) return '\u2013';
  return String(Number(v.toPrecision(digits || 6)));
}
function pct(v) { return fmt(100 * v, 3) + ' %'; }
function niceStep(min) {
  let p = Math.pow(10, Math.floor(Math.log10(Math.max(min, 1e-12))));
  for (;;) { for (const m of [1, 2, 5]) if (m * p >= min) return m * p; p *= 10; }
}

// ---- data ----------------------------------------------------------------------------------
function bytes(b64) {
  const s = atob(b64), n = s.length, out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = s.charCodeAt(i);
  return out;
}
function column(c) {
  const b = bytes(c[1]);
  return c[0] === 'u8' ? b : c[0] === 'u16' ? new Uint16Array(b.buffer) : new Uint32Array(b.buffer);
}
function chunkColor(k, chunk, chunks) {
  const t = chunks > 1 ? 0.5 * chunk / (chunks - 1) : 0, c = BASE[k];
  return c.map(v => v + Math.floor((255 - v) * t + 0.5));
}
const css = c => 'rgb(' + c[0] + ',' + c[1] + ',' + c[2] + ')';
// A colour as one pixel of an ImageData (bytes R, G, B, A in memory: little-endian ABGR).
const packed = (r, g, b) => (0xff000000 | (b << 16) | (g << 8) | r) >>> 0;

function loadSchedule(d, si) {
  const S = Object.assign({}, d);
  S.index = si;
  S.T = new Float64Array(bytes(d.times).buffer);
  const c = d.cols;
  S.kind = column(c.kind); S.stage = column(c.stage); S.mb = column(c.mb);
  S.slot = column(c.slot); S.t0 = column(c.t0); S.t1 = column(c.t1);
  if (c.kind2) { S.kind2 = column(c.kind2); S.stage2 = column(c.stage2); S.mb2 = column(c.mb2); }
  const n = d.count, P = d.ranks, V = Math.max(1, d.stagesPerRank);
  // Colours: one per (kind, chunk), as the SVG pictures shade them.
  S.colors = [];
  for (let k = 0; k < 12; k++) {
    S.colors.push([]);
    for (let ch = 0; ch < V; ch++) S.colors[k].push(k <= K_O ? chunkColor(k, ch, V) : BASE[k]);
  }
  S.packed = S.colors.map(row => row.map(c => packed(c[0], c[1], c[2])));
  S.rankOf = new Uint32Array(n);
  // Lanes: per rank, the action indices of each stream; starts never decrease along a lane
  // (each stream runs its actions in the rank's order), which the binary searches rely on.
  S.lanes = []; S.hasComm = false;
  for (let r = 0; r < P; r++) {
    const a = d.rankStart[r], b = d.rankStart[r + 1], cnt = [0, 0, 0];
    for (let i = a; i < b; i++) { S.rankOf[i] = r; cnt[lane_of(S.kind[i])]++; }
    const L = [new Int32Array(cnt[0]), new Int32Array(cnt[1]), new Int32Array(cnt[2])];
    const fill = [0, 0, 0], maxDur = [0, 0, 0];
    for (let i = a; i < b; i++) {
      const l = lane_of(S.kind[i]);
      L[l][fill[l]++] = i;
      const dur = S.T[S.t1[i]] - S.T[S.t0[i]];
      if (dur > maxDur[l]) maxDur[l] = dur;
    }
    for (let l = 0; l < 3; l++) {
      const idx = L[l];
      for (let j = 1; j < idx.length; j++)
        if (S.T[S.t0[idx[j]]] < S.T[S.t0[idx[j - 1]]]) {
          L[l] = Int32Array.from(idx).sort((x, y) => S.T[S.t0[x]] - S.T[S.t0[y]]);
          break;
        }
    }
    if (cnt[1] + cnt[2] > 0) S.hasComm = true;
    // What drawing reads, contiguous per lane: start, end and palette entry of each action.
    const st = [], en = [], pal = [];
    for (let l = 0; l < 3; l++) {
      const idx = L[l], m = idx.length;
      const s0 = new Float64Array(m), e0 = new Float64Array(m), p0 = new Uint16Array(m);
      for (let j = 0; j < m; j++) {
        const i = idx[j];
        s0[j] = S.T[S.t0[i]]; e0[j] = S.T[S.t1[i]];
        p0[j] = S.kind[i] * V + Math.min(S.stageChunk[S.stage[i]], V - 1);
      }
      st.push(s0); en.push(e0); pal.push(p0);
    }
    S.lanes.push({ idx: L, maxDur: maxDur, st: st, en: en, pal: pal });
  }
  // The palette: entry k * V + chunk.
  S.palR = new Float64Array(12 * V); S.palG = new Float64Array(12 * V);
  S.palB = new Float64Array(12 * V); S.palP = new Uint32Array(12 * V);
  for (let k = 0; k < 12; k++)
    for (let ch = 0; ch < V; ch++) {
      const c = S.colors[k][ch], e = k * V + ch;
      S.palR[e] = c[0]; S.palG[e] = c[1]; S.palB[e] = c[2]; S.palP[e] = packed(c[0], c[1], c[2]);
    }
  S.memory = memoryCurves(S);
  S.memMax = 0;
  for (const m of S.memory) S.memMax = Math.max(S.memMax, m.max);
  return S;
}

// Activation memory per rank, by the simulator's rule and in its order of additions: a forward
// allocates at its start, B frees at its end, I frees `freesByI` of it and W the rest.
function memoryCurves(S) {
  const out = [];
  for (let r = 0; r < S.ranks; r++) {
    if (S.status === 'invalid') { // nothing ran: the step layout has no memory to show
      out.push({ t: Float64Array.of(0), v: Float64Array.of(0), max: 0 });
      continue;
    }
    const a = S.rankStart[r], b = S.rankStart[r + 1];
    const t = [0], v = [0];
    let held = 0, max = 0;
    const part = (k, st, when) => {
      const act = S.stageActivation[st];
      if (k === K_F) held += act;
      else if (k === K_B) held -= act;
      else if (k === K_I) held -= act * S.freesByI;
      else held -= act * (1 - S.freesByI);
      t.push(when); v.push(held);
      if (held > max) max = held;
    };
    for (let i = a; i < b; i++) {
      const k = S.kind[i];
      if (k > K_O) continue;
      if (k === K_O) {
        part(K_F, S.stage[i], S.T[S.t0[i]]);
        part(S.kind2[i], S.stage2[i], S.T[S.t1[i]]);
      } else {
        part(k, S.stage[i], k === K_F ? S.T[S.t0[i]] : S.T[S.t1[i]]);
      }
    }
    out.push({ t: Float64Array.from(t), v: Float64Array.from(v), max: max });
  }
  return out;
}

const SCHED = DATA.schedules.map(loadSchedule);
const start = (S, i) => S.T[S.t0[i]];
const end = (S, i) => S.T[S.t1[i]];
function actionName(S, i) {
  const k = S.kind[i];
  const simple = (st, kk, m) => st + CODES[kk] + (kk === 5 || kk === 6 || kk === 11 ? '' : m);
  if (k === K_O)
    return '(' + simple(S.stage[i], K_F, S.mb[i]) + ';' +
      simple(S.stage2[i], S.kind2[i], S.mb2[i]) + ')OVERLAP_F_B';
  return simple(S.stage[i], k, S.mb[i]);
}
function colorOf(S, i) {
  const k = S.kind[i];
  return S.colors[k][Math.min(S.stageChunk[S.stage[i]], S.colors[k].length - 1)];
}

// ---- dependencies --------------------------------------------------------------------------
// Tables from (stage, microbatch) to the action that produced it, built at the first question.
function indexTables(S) {
  if (S.tables) return S.tables;
  const M = S.microbatches, size = S.stageRank.length * M;
  const make = () => size <= (1 << 24) ? new Int32Array(size).fill(-1) : new Map();
  const get = (tab, st, m) => {
    if (st < 0 || m >= M) return -1;
    const key = st * M + m;
    if (tab instanceof Map) { const v = tab.get(key); return v === undefined ? -1 : v; }
    return tab[key];
  };
  const set = (tab, st, m, i) => {
    const key = st * M + m;
    if (tab instanceof Map) tab.set(key, i); else tab[key] = i;
  };
  const tabs = { F: make(), G: make(), SF: make(), SB: make(), RF: make(), RB: make(), get: get,
    unshard: null };
  for (let i = 0; i < S.count; i++) {
    const k = S.kind[i], st = S.stage[i], m = S.mb[i];
    if (k === K_F || k === K_O) set(tabs.F, st, m, i);
    else if (k === K_B || k === K_I) set(tabs.G, st, m, i);
    else if (k === K_SF) set(tabs.SF, st, m, i);
    else if (k === K_SB) set(tabs.SB, st, m, i);
    else if (k === K_RF) set(tabs.RF, st, m, i);
    else if (k === K_RB) set(tabs.RB, st, m, i);
    if (k === K_O && (S.kind2[i] === K_B || S.kind2[i] === K_I))
      set(tabs.G, S.stage2[i], S.mb2[i], i);
  }
  // Compute on a stage waits for the stage's latest UNSHARD (FSDP): per action, that UNSHARD.
  let fsdp = false;
  for (let i = 0; i < S.count && !fsdp; i++) fsdp = S.kind[i] === 5;
  if (fsdp) {
    tabs.unshard = new Int32Array(S.count).fill(-1);
    const last = new Int32Array(S.stageRank.length);
    for (let r = 0; r < S.ranks; r++) {
      last.fill(-1);
      for (let i = S.rankStart[r]; i < S.rankStart[r + 1]; i++) {
        const k = S.kind[i];
        if (k === 5) last[S.stage[i]] = i;
        else if (k <= K_O) tabs.unshard[i] = last[S.stage[i]];
      }
    }
  }
  S.tables = tabs;
  return tabs;
}

// What action `i` waited for: its inputs, each with the time it was ready on `i`'s rank, and
// the rank's previous compute action (the rank is free at its end). The input with the latest
// ready time decided the start (for a RECV: the end, when the data arrived).
function dependencies(S, i) {
  const tabs = indexTables(S), get = tabs.get, r = S.rankOf[i], k = S.kind[i];
  const inputs = [];
  let prev = -1;
  for (let j = i - 1; j >= S.rankStart[r]; j--) if (S.kind[j] <= K_O) { prev = j; break; }
  const input = (j, extra, why) => {
    if (j >= 0) inputs.push({ i: j, ready: end(S, j) + extra, why: why });
  };
  const fromRank = st => S.stageRank[st];
  const dataPart = (kk, st, m) => {
    if (kk === K_F) {
      const p = S.stagePrev[st];
      if (p < 0) return;
      if (fromRank(p) === r) input(get(tabs.F, p, m), 0, 'its input');
      else if (S.lowered) input(get(tabs.RF, st, m), 0, 'its input (received)');
      else input(get(tabs.F, p, m), S.message, 'its input (sent from rank ' + fromRank(p) + ')');
    } else if (kk === K_B || kk === K_I) {
      input(get(tabs.F, st, m), 0, 'its forward');
      const nx = S.stageNext[st];
      if (nx < 0) return;
      if (fromRank(nx) === r) input(get(tabs.G, nx, m), 0, 'its output gradient');
      else if (S.lowered) input(get(tabs.RB, st, m), 0, 'its output gradient (received)');
      else input(get(tabs.G, nx, m), S.message,
        'its output gradient (sent from rank ' + fromRank(nx) + ')');
    } else if (kk === K_W) {
      input(get(tabs.G, st, m), 0, 'its input gradient (I)');
    }
  };
  const st = S.stage[i], m = S.mb[i];
  if (k <= K_O) {
    dataPart(k === K_O ? K_F : k, st, m);
    if (k === K_O) dataPart(S.kind2[i], S.stage2[i], S.mb2[i]);
    if (tabs.unshard) input(tabs.unshard[i], 0, 'its parameters (UNSHARD)');
  } else if (k === K_SF) input(get(tabs.F, st, m), 0, 'the data it sends');
  else if (k === K_SB) input(get(tabs.G, st, m), 0, 'the data it sends');
  else if (k === K_RF) {
    const j = get(tabs.SF, S.stagePrev[st], m);
    if (j >= 0) inputs.push({ i: j, ready: start(S, j) + S.message, why: 'its SEND' });
  } else if (k === K_RB) {
    const j = get(tabs.SB, S.stageNext[st], m);
    if (j >= 0) inputs.push({ i: j, ready: start(S, j) + S.message, why: 'its SEND' });
  }
  const free = prev >= 0 ? end(S, prev) : 0;
  let decisive = null;
  for (const x of inputs) if (!decisive || x.ready > decisive.ready) decisive = x;
  return { inputs: inputs, prev: prev, free: free, decisive: decisive };
}

// The critical path of action `i`: from `i` back through the input (or the rank's previous
// action) that decided each start, to an action that could start at 0.
function criticalPath(S, i) {
  const path = [i];
  for (let guard = 0; guard < S.count; guard++) {
    const d = dependencies(S, i);
    const t = S.kind[i] === K_RF || S.kind[i] === K_RB ? end(S, i) : start(S, i);
    let next = -1;
    if (d.decisive && d.decisive.ready >= d.free - 1e-12 &&
        (d.decisive.ready >= t - 1e-9 * Math.max(1, Math.abs(t)) || d.prev < 0))
      next = d.decisive.i;
    else if (d.prev >= 0) next = d.prev;
    if (next < 0 || t <= 0) break;
    path.push(next);
    i = next;
  }
  return path;
}

)js";

} // namespace ppsched::detail::html
