#pragma once
/// \file io/detail/html_report_script_view.hpp
/// The second part of the report page's script (see html_report_assets.hpp): layout, drawing
/// (the canvas Gantt with level of detail, memory charts) and interaction (zoom, tooltips,
/// tables). It continues the function the model part opens.

#include <string_view>

namespace ppsched::detail::html {

/// The script's view: layout, drawing, interaction.
inline constexpr std::string_view script_view =
    R"js(// ---- layout --------------------------------------------------------------------------------
const canvas = document.getElementById('chart'), ctx = canvas.getContext('2d');
const tooltip = document.getElementById('tooltip');
const LEFT = 92, RIGHT = 18, HEAD = 38, AXIS = 16, MEM_H = 110, MEM_GAP = 26, PANEL_GAP = 22;
let W = 800, H = 400, plotW = 700;
let span = 1;
for (const S of SCHED) span = Math.max(span, S.makespan, S.extent);
let v0 = 0, v1 = span * 1.01;
let layout = [];
let highlight = [];   // {S, sel, inputs: [...], path: [...]} per highlighted action
let problemsShown = [];

function computeLayout() {
  layout = [];
  let y = 6;
  for (const S of SCHED) {
    const P = S.ranks;
    const lane = P <= 8 ? 22 : P <= 16 ? 16 : P <= 32 ? 10 : 7;
    const comm = S.hasComm ? Math.max(4, Math.round(lane * 0.45)) : 0;
    const gap = P <= 16 ? 4 : 1;
    const row = lane + (comm ? comm + 1 : 0) + gap;
    const L = { S: S, top: y, lane: lane, comm: comm, row: row };
    L.rowsTop = y + HEAD + AXIS;
    L.rowsBottom = L.rowsTop + P * row - gap;
    L.memTop = L.rowsBottom + MEM_GAP;
    L.memBottom = L.memTop + MEM_H;
    L.bottom = L.memBottom + 18;
    layout.push(L);
    y = L.bottom + PANEL_GAP;
  }
  return y;
}

function resize() {
  dpr = window.devicePixelRatio || 1;
  W = Math.max(480, canvas.parentElement.clientWidth);
  H = computeLayout();
  plotW = W - LEFT - RIGHT;
  canvas.width = Math.round(W * dpr);
  canvas.height = Math.round(H * dpr);
  canvas.style.height = H + 'px';
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  draw();
}
const X = t => LEFT + (t - v0) * plotW / (v1 - v0);
const timeAt = x => v0 + (x - LEFT) * (v1 - v0) / plotW;

// ---- drawing -------------------------------------------------------------------------------
// Level of detail: the boxes of a panel are painted into a pixel buffer (one fill per box row,
// no canvas call per box), which is then drawn in one call. Boxes at least 4 px wide are
// painted one by one; narrower ones are summed into pixel columns (colour weighted by the time
// each covers, blended with the idle grey by how much of the column is busy). A frame costs
// O(visible actions + pixels), whatever the zoom.
let colR = new Float64Array(0), colG, colB, colW;
let off = null, offCtx = null, img = null, pix = null, dpr = 1;
let bufW = 0, bufTop = 0, bufH = 0;
const labelsToDraw = [];
function ensureColumns() {
  if (colR.length !== plotW + 2) {
    const n = plotW + 2;
    colR = new Float64Array(n); colG = new Float64Array(n); colB = new Float64Array(n);
    colW = new Float64Array(n);
  }
}
// Starts painting the rows of a panel: [top, top + height) in CSS pixels.
function beginBuffer(top, height) {
  bufW = Math.max(1, Math.round(plotW * dpr));
  bufH = Math.max(1, Math.round(height * dpr));
  bufTop = top;
  if (!img || img.width !== bufW || img.height < bufH) {
    off = document.createElement('canvas');
    off.width = bufW; off.height = bufH;
    offCtx = off.getContext('2d');
    img = offCtx.createImageData(bufW, bufH);
    pix = new Uint32Array(img.data.buffer);
  }
  pix.fill(0, 0, bufW * bufH);
  if (laneRow.length !== bufW) laneRow = new Uint32Array(bufW);
  labelsToDraw.length = 0;
}
function endBuffer() {
  offCtx.putImageData(img, 0, 0, 0, 0, bufW, bufH);
  ctx.drawImage(off, 0, 0, bufW, bufH, LEFT, bufTop, bufW / dpr, bufH / dpr);
  ctx.font = '11px DejaVu Sans, Verdana, Arial, sans-serif';
  ctx.textAlign = 'center'; ctx.textBaseline = 'middle';
  for (const l of labelsToDraw) { ctx.fillStyle = l[3]; ctx.fillText(l[0], l[1], l[2]); }
}
// A lane is painted into one row of pixels, then copied to each of its rows: one fill per box.
let laneRow = new Uint32Array(0);
// Paints [x0, x1) (CSS pixels from the plot's left edge) of the lane's row in `colour`.
function paint(x0, x1, colour) {
  let a = Math.round(x0 * dpr), b = Math.round(x1 * dpr);
  if (b <= a) b = a + 1;
  if (a < 0) a = 0;
  if (b > bufW) b = bufW;
  if (a < b) laneRow.fill(colour, a, b);
}
// Copies the lane's row to the rows [y, y + h) (CSS pixels) of the buffer.
function blitLane(y, h) {
  const r0 = Math.max(0, Math.round((y - bufTop) * dpr));
  const r1 = Math.min(bufH, Math.round((y + h - bufTop) * dpr));
  for (let r = r0; r < r1; r++) pix.set(laneRow, r * bufW);
}

function lowerBound(S, idx, t) {
  let lo = 0, hi = idx.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (S.T[S.t0[idx[mid]]] < t) lo = mid + 1; else hi = mid; }
  return lo;
}

// Draws lane l of a rank at [y, y + h): `bg` from bx0 to bx1 (the rank's span), then its boxes.
function drawLane(S, lane, l, y, h, labels, minW, bg, bx0, bx1) {
  const idx = lane.idx[l], st = lane.st[l], en = lane.en[l], pal = lane.pal[l], n = st.length;
  laneRow.fill(0);
  paint(bx0, bx1, bg);
  if (n === 0) { blitLane(y, h); return; }
  ensureColumns();
  const scale = plotW / (v1 - v0), from = v0 - lane.maxDur[l];
  const palR = S.palR, palG = S.palG, palB = S.palB, palP = S.palP;
  let lo = 0, hi = n;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (st[mid] < from) lo = mid + 1; else hi = mid; }
  let cmin = plotW, cmax = -1;
  for (let j = lo; j < n; j++) {
    const a = st[j];
    if (a > v1) break;
    const b = en[j];
    if (b < v0) continue;
    let x0 = (a - v0) * scale, x1 = (b - v0) * scale;
    if (x1 - x0 < minW) { const c = (x0 + x1) / 2; x0 = c - minW / 2; x1 = c + minW / 2; }
    const e = pal[j];
    if (x1 - x0 >= 4) {
      const gap = x1 - x0 >= 8 ? 1 : 0;
      paint(x0, x1 - gap, palP[e]);
      if (labels && h >= 12 && x1 - x0 >= 11) {
        const i = idx[j], k = S.kind[i];
        const text = k === K_O ? S.mb[i] + '|' + S.mb2[i] : String(S.mb[i]);
        if (text.length * 7 + 4 <= x1 - x0 - gap)
          labelsToDraw.push([text, LEFT + (x0 + x1 - gap) / 2, y + h / 2 + 0.5,
            0.299 * palR[e] + 0.587 * palG[e] + 0.114 * palB[e] < 150 ? '#fff' : '#222']);
      }
      continue;
    }
    // A narrow box: its time goes to the one to four columns it covers.
    let c = x0 > 0 ? Math.floor(x0) : 0;
    const end = x1 < plotW ? x1 : plotW;
    if (c < cmin) cmin = c;
    for (; c < end; c++) {
      const cover = (x1 < c + 1 ? x1 : c + 1) - (x0 > c ? x0 : c);
      if (cover <= 0) continue;
      colR[c] += palR[e] * cover; colG[c] += palG[e] * cover; colB[c] += palB[e] * cover;
      colW[c] += cover;
    }
    if (c > cmax) cmax = c;
  }
  for (let c = cmin; c < cmax && c < plotW; c++) {
    const w = colW[c];
    if (w <= 0) continue;
    const cover = w < 1 ? w : 1, keep = 1 - cover;
    const r = Math.min(255, (colR[c] / w) * cover + IDLE[0] * keep) | 0;
    const g = Math.min(255, (colG[c] / w) * cover + IDLE[1] * keep) | 0;
    const b = Math.min(255, (colB[c] / w) * cover + IDLE[2] * keep) | 0;
    paint(c, c + 1, packed(r, g, b));
    colR[c] = colG[c] = colB[c] = colW[c] = 0;
  }
  blitLane(y, h);
}

function drawMemory(L) {
  const S = L.S, top = L.memTop, h = MEM_H;
  // The limit counts parameters + activations (as simulate's --memory-limit); the chart shows
  // activations, so each rank's line sits at the limit less its parameters (its peak memory
  // less its peak activations). One line where they agree.
  const limit = DATA.memoryLimit;
  const lines = [];
  if (limit !== null && limit !== undefined)
    for (let r = 0; r < S.ranks; r++) {
      const R = S.rankSummary[r];
      const at = limit - Math.max(0, R ? R.peak_memory - R.peak_activations : 0);
      if (!lines.some(l => Math.abs(l.at - at) <= 1e-9 * Math.max(1, Math.abs(limit))))
        lines.push({ at: at, rank: r });
    }
  const ymax = Math.max(S.memMax, ...lines.map(l => l.at), 1e-12) * 1.08;
  const Y = v => top + h - v / ymax * h;
  ctx.fillStyle = '#fbfbfb';
  ctx.fillRect(LEFT, top, plotW, h);
  ctx.strokeStyle = '#ccc'; ctx.lineWidth = 1;
  ctx.strokeRect(LEFT + 0.5, top + 0.5, plotW - 1, h - 1);
  ctx.fillStyle = '#333'; ctx.font = 'bold 12px DejaVu Sans, Verdana, Arial, sans-serif';
  ctx.textAlign = 'left'; ctx.textBaseline = 'alphabetic';
  ctx.fillText('activation memory per rank (peak ' + fmt(S.memMax) + ')', LEFT, top - 7);
  ctx.font = '11px DejaVu Sans, Verdana, Arial, sans-serif'; ctx.textAlign = 'right';
  ctx.fillStyle = '#555';
  ctx.textBaseline = 'middle';
  if (S.memMax > 0) ctx.fillText(fmt(S.memMax), LEFT - 8, Y(S.memMax));
  ctx.fillText('0', LEFT - 8, top + h - 2);
  ctx.save();
  ctx.beginPath(); ctx.rect(LEFT, top, plotW, h); ctx.clip();
  const scale = plotW / (v1 - v0);
  for (let r = 0; r < S.ranks; r++) {
    const m = S.memory[r];
    const hue = S.ranks > 1 ? 220 - 220 * r / (S.ranks - 1) : 220;
    ctx.strokeStyle = 'hsl(' + hue + ',65%,45%)';
    ctx.lineWidth = S.ranks > 16 ? 1 : 1.5;
    ctx.beginPath();
    // Step curve, collapsed to one vertical segment per pixel column (level of detail).
    let lo = 0, hi = m.t.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (m.t[mid] < v0) lo = mid + 1; else hi = mid; }
    let j = Math.max(0, lo - 1);
    let px = LEFT + (m.t[j] - v0) * scale, cur = Y(m.v[j]), ymin = cur, ymx = cur;
    ctx.moveTo(Math.max(LEFT - 1, px), cur);
    for (j++; j < m.t.length; j++) {
      const x = LEFT + (m.t[j] - v0) * scale, yv = Y(m.v[j]);
      if (Math.round(x) === Math.round(px)) {
        ymin = Math.min(ymin, yv); ymx = Math.max(ymx, yv); cur = yv; continue;
      }
      if (ymin !== ymx) { ctx.lineTo(px, ymin); ctx.lineTo(px, ymx); }
      ctx.lineTo(px, cur); ctx.lineTo(x, cur); ctx.lineTo(x, yv);
      px = x; cur = yv; ymin = ymx = yv;
      if (x > LEFT + plotW + 2) break;
    }
    if (ymin !== ymx) { ctx.lineTo(px, ymin); ctx.lineTo(px, ymx); }
    ctx.lineTo(px, cur);
    ctx.lineTo(Math.min(X(S.rankSummary[r].end), LEFT + plotW + 1), cur);
    ctx.stroke();
  }
  lines.forEach((l, i) => {
    const y = Y(l.at);
    // Several lines: each in its rank's colour, labels staggered so close lines stay legible.
    const colour = lines.length > 1
      ? 'hsl(' + (S.ranks > 1 ? 220 - 220 * l.rank / (S.ranks - 1) : 220) + ',65%,40%)'
      : '#c0392b';
    ctx.strokeStyle = colour; ctx.lineWidth = 1.5; ctx.setLineDash([6, 4]);
    ctx.beginPath(); ctx.moveTo(LEFT, y); ctx.lineTo(LEFT + plotW, y); ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = colour; ctx.textAlign = 'right';
    // Above the line, or below it when the line runs along the top.
    ctx.textBaseline = y - top < 14 ? 'top' : 'bottom';
    const text = lines.length > 1 ? 'rank ' + l.rank + ': limit ' + fmt(limit) + ' less ' + fmt(limit - l.at)
               : 'limit ' + fmt(limit) + (l.at !== limit ? ' less parameters ' + fmt(limit - l.at) : '');
    ctx.fillText(text, LEFT + plotW - 4 - (i % 4) * 170, y + (y - top < 14 ? 2 : -2));
  });
  ctx.restore();
  // The rank colours.
  ctx.textBaseline = 'middle'; ctx.textAlign = 'left';
  ctx.fillStyle = '#555';
  const ly = top + h + 10;
  ctx.fillText('rank 0', LEFT, ly);
  const gx = LEFT + 48;
  for (let r = 0; r < S.ranks; r++) {
    const hue = S.ranks > 1 ? 220 - 220 * r / (S.ranks - 1) : 220;
    ctx.fillStyle = 'hsl(' + hue + ',65%,45%)';
    ctx.fillRect(gx + r * 80 / S.ranks, ly - 3, 80 / S.ranks + 0.5, 6);
  }
  ctx.fillStyle = '#555';
  ctx.fillText('rank ' + (S.ranks - 1), gx + 86, ly);
}

function outline(L, i, color, width) {
  const S = L.S, r = S.rankOf[i], k = S.kind[i], lane = lane_of(k);
  const ry = L.rowsTop + r * L.row;
  let y = ry, h = L.lane;
  if (lane !== 0) { h = L.comm / 2; y = ry + L.lane + 1 + (lane === 1 ? 0 : h); }
  let x0 = X(start(S, i)), x1 = X(end(S, i));
  if (x1 - x0 < 3) { const c = (x0 + x1) / 2; x0 = c - 1.5; x1 = c + 1.5; }
  ctx.strokeStyle = color; ctx.lineWidth = width;
  ctx.strokeRect(x0 - width / 2, y - width / 2, x1 - x0 + width, h + width);
  return { x0: x0, x1: x1, y: y + h / 2 };
}

// Significant digits that tell apart numbers `step` apart in the view (6 at least, 15 at most).
function viewDigits(step) {
  const top = Math.max(Math.abs(v0), Math.abs(v1), step);
  return Math.min(15, Math.max(6, Math.ceil(Math.log10(top / step)) + 2));
}

function draw() {
  ctx.clearRect(0, 0, W, H);
  const step = niceStep(90 * (v1 - v0) / plotW);
  const ticks = [];
  for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) ticks.push(t);
  // Enough digits that neighbouring ticks differ, however deep the zoom.
  const tickDigits = viewDigits(step);
  for (const L of layout) {
    const S = L.S;
    // Heading.
    ctx.textAlign = 'left'; ctx.textBaseline = 'alphabetic';
    ctx.fillStyle = S.status === 'ok' ? '#222' : '#a61b1b';
    ctx.font = 'bold 14px DejaVu Sans, Verdana, Arial, sans-serif';
    const head = S.name + ' \u2014 ' + S.ranks + (S.ranks === 1 ? ' rank, ' : ' ranks, ') +
      S.stagesPerRank + (S.stagesPerRank === 1 ? ' stage' : ' stages') + ' per rank, ' +
      S.microbatches + (S.microbatches === 1 ? ' microbatch' : ' microbatches') + (S.lowered ? ', lowered' : '') + (S.steps ? ', step layout' : '') +
      (S.status !== 'ok' ? ' \u2014 ' + S.status.toUpperCase() : '');
    ctx.fillText(head, 10, L.top + 15);
    ctx.font = '12px DejaVu Sans, Verdana, Arial, sans-serif'; ctx.fillStyle = '#444';
    let stats = 'makespan ' + fmt(S.makespan) + ' \u00b7 ideal ' + fmt(S.ideal) +
      ' \u00b7 bubble ratio ' + fmt(S.bubbleRatio, 3) + ' \u00b7 idle ' + pct(S.bubbleFraction);
    if (S.lowerBound !== null)
      stats += ' \u00b7 lower bound ' + fmt(S.lowerBound) + ' \u00b7 gap ' +
        pct((S.makespan - S.lowerBound) / S.lowerBound);
    if (S.note) stats += ' \u00b7 ' + S.note;
    ctx.fillText(stats, 10, L.top + 32);
    // Axis labels and grid.
    ctx.font = '11px DejaVu Sans, Verdana, Arial, sans-serif'; ctx.fillStyle = '#555';
    ctx.textAlign = 'center'; ctx.textBaseline = 'alphabetic';
    for (const t of ticks) {
      const text = fmt(t, tickDigits);
      // Not over the axis's name ("time", right-aligned left of the plot).
      if (X(t) - ctx.measureText(text).width / 2 < LEFT - 6) continue;
      ctx.fillText(text, X(t), L.rowsTop - 5);
    }
    ctx.textAlign = 'right';
    ctx.fillText(S.steps ? 'step' : 'time', LEFT - 8, L.rowsTop - 5);
    ctx.strokeStyle = '#e3e3e3'; ctx.lineWidth = 1;
    ctx.beginPath();
    for (const t of ticks) {
      const x = Math.round(X(t)) + 0.5;
      ctx.moveTo(x, L.rowsTop - 2); ctx.lineTo(x, L.rowsBottom + 2);
      ctx.moveTo(x, L.memTop); ctx.lineTo(x, L.memBottom);
    }
    ctx.stroke();
    // Rows.
    const bad = new Set(S.problems.filter(p => p.rank >= 0).map(p => p.rank));
    ctx.save();
    ctx.beginPath(); ctx.rect(LEFT, L.rowsTop - 2, plotW, L.rowsBottom - L.rowsTop + 4); ctx.clip();
    beginBuffer(L.rowsTop, L.rowsBottom - L.rowsTop);
    const idle = packed(IDLE[0], IDLE[1], IDLE[2]), commIdle = packed(0xf5, 0xf5, 0xf5);
    for (let r = 0; r < S.ranks; r++) {
      const ry = L.rowsTop + r * L.row;
      const x0 = Math.max(X(0), LEFT - 1) - LEFT;
      const x1 = Math.min(X(Math.max(S.makespan, S.extent)), LEFT + plotW + 1) - LEFT;
      const lanes = S.lanes[r];
      drawLane(S, lanes, 0, ry, L.lane, true, 1, idle, x0, x1);
      if (L.comm) {
        const hh = L.comm / 2;
        drawLane(S, lanes, 1, ry + L.lane + 1, hh, false, 1.5, commIdle, x0, x1);
        drawLane(S, lanes, 2, ry + L.lane + 1 + hh, L.comm - hh, false, 1, commIdle, x0, x1);
      }
    }
    endBuffer();
    // The makespan, dashed.
    ctx.strokeStyle = '#b03a2e'; ctx.lineWidth = 1.5; ctx.setLineDash([4, 3]);
    ctx.beginPath(); ctx.moveTo(X(S.makespan), L.rowsTop - 4); ctx.lineTo(X(S.makespan), L.rowsBottom + 4);
    ctx.stroke(); ctx.setLineDash([]);
    // Problems: a red mark where each stuck or failing rank stopped, and its failing step.
    const marked = new Set();
    for (const p of S.problems) {
      if (p.rank < 0 || p.rank >= S.ranks) continue;
      const ry = L.rowsTop + p.rank * L.row, x = X(p.time);
      if (!marked.has(p.rank)) {
        // One mark and one line of text per rank (the full list is above the picture).
        marked.add(p.rank);
        ctx.fillStyle = '#c0392b';
        ctx.beginPath(); ctx.moveTo(x, ry); ctx.lineTo(x + 9, ry + L.lane / 2); ctx.lineTo(x, ry + L.lane); ctx.fill();
        ctx.font = 'bold 11px DejaVu Sans, Verdana, Arial, sans-serif'; ctx.textBaseline = 'middle';
        const text = p.message.replace(/^[a-z ]+: /, ''), w = ctx.measureText(text).width;
        const left = x + 14 + w > LEFT + plotW, tx = left ? x - 6 - w : x + 14;
        ctx.fillStyle = 'rgba(255,255,255,0.85)';
        ctx.fillRect(tx - 3, ry + L.lane / 2 - 7, w + 6, 14);
        ctx.fillStyle = '#a61b1b'; ctx.textAlign = 'left';
        ctx.fillText(text, tx, ry + L.lane / 2);
      }
      if (p.step >= 0)
        for (let i = S.rankStart[p.rank]; i < S.rankStart[p.rank + 1]; i++)
          if (S.slot[i] === p.step) outline(L, i, '#c0392b', 2.5);
    }
    ctx.restore();
    // Rank labels (red for a rank with a problem) and the peak memory column.
    ctx.font = (L.lane >= 12 ? 12 : 10) + 'px DejaVu Sans, Verdana, Arial, sans-serif';
    ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
    const every = L.row >= 9 ? 1 : Math.ceil(10 / L.row);
    for (let r = 0; r < S.ranks; r++) {
      if (r % every && !bad.has(r)) continue;
      ctx.fillStyle = bad.has(r) ? '#c0392b' : '#333';
      ctx.fillText((bad.has(r) ? '\u26a0 ' : '') + 'rank ' + r, LEFT - 8, L.rowsTop + r * L.row + L.lane / 2);
    }
    drawMemory(L);
  }
  // Highlights: the chosen actions, their inputs, their critical paths.
  for (const hl of highlight) {
    const L = layout[hl.S.index];
    ctx.save();
    ctx.beginPath(); ctx.rect(LEFT, L.rowsTop - 4, plotW, L.rowsBottom - L.rowsTop + 8); ctx.clip();
    let last = null;
    ctx.lineWidth = 1.5;
    for (const i of hl.path) {
      const b = outline(L, i, '#d62728', 2);
      if (last) {
        ctx.strokeStyle = 'rgba(214,39,40,0.8)'; ctx.lineWidth = 1.5;
        ctx.beginPath(); ctx.moveTo(last.x0, last.y); ctx.lineTo(b.x1, b.y); ctx.stroke();
      }
      last = b;
    }
    for (const x of hl.inputs) outline(L, x.i, '#ff9f1c', 2.5);
    if (hl.sel >= 0) outline(L, hl.sel, '#000', 2.5);
    ctx.restore();
  }
  const rng = document.getElementById('range');
  const d = viewDigits((v1 - v0) / 10);
  rng.textContent = 'view ' + fmt(v0, d) + ' \u2013 ' + fmt(v1, d) + ' of ' + fmt(span);
}

let pending = false;
function redraw() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; draw(); });
}

// ---- interaction ---------------------------------------------------------------------------
function setView(a, b) {
  const full = span * 1.02, minW = Math.max(span, 1) * 1e-6;
  if (b - a < minW) { const c = (a + b) / 2; a = c - minW / 2; b = c + minW / 2; }
  if (b - a > full) { a = -span * 0.01; b = a + full; }
  if (a < -span * 0.01) { b += -span * 0.01 - a; a = -span * 0.01; }
  if (b > span * 1.01) { a -= b - span * 1.01; b = span * 1.01; }
  v0 = a; v1 = b;
  redraw();
}
function zoom(factor, at) {
  const t = at === undefined ? (v0 + v1) / 2 : at;
  setView(t - (t - v0) * factor, t + (v1 - t) * factor);
}

// The action under (x, y) in canvas coordinates, or null.
function hit(x, y) {
  for (const L of layout) {
    if (y < L.rowsTop || y > L.rowsBottom) continue;
    const S = L.S, r = Math.floor((y - L.rowsTop) / L.row);
    if (r < 0 || r >= S.ranks) return null;
    const dy = y - L.rowsTop - r * L.row;
    let lane = 0;
    if (dy > L.lane) { if (!L.comm || dy > L.lane + 1 + L.comm) return null; lane = dy < L.lane + 1 + L.comm / 2 ? 1 : 2; }
    const idx = S.lanes[r].idx[lane], t = timeAt(x), tol = 2 * (v1 - v0) / plotW;
    let best = null, bestDist = Infinity;
    let j = lowerBound(S, idx, t + tol) - 1;
    for (; j >= 0; j--) {
      const i = idx[j], a = start(S, i), b = end(S, i);
      if (a < t - S.lanes[r].maxDur[lane] - tol) break;
      // Within two pixels: first an action drawn as a tick (a send inside a receive's span),
      // the nearest; then one under the pointer, the shortest (receives may overlap); then a
      // box whose edge is near.
      const off = t < a ? a - t : t > b ? t - b : 0;
      if (off > tol) continue;
      const dist = b - a <= tol ? off : off === 0 ? tol + (b - a) : 1e9 + off;
      if (dist < bestDist) { best = i; bestDist = dist; }
    }
    return best === null ? null : { L: L, S: S, i: best };
  }
  return null;
}

function describe(S, i) {
  const k = S.kind[i], r = S.rankOf[i], a = start(S, i), b = end(S, i);
  const part = (st, m, kk) => 'stage ' + st + ' (chunk ' + S.stageChunk[st] + ')' +
    (kk === 5 || kk === 6 || kk === 11 ? '' : ', microbatch ' + m);
  let h = '<b>' + actionName(S, i) + '</b> ' + NAMES[k] + '<br>';
  if (k === K_O)
    h += 'forward of ' + part(S.stage[i], S.mb[i], K_F) + ' with ' + CODES[S.kind2[i]] + ' of ' +
      part(S.stage2[i], S.mb2[i], S.kind2[i]) + '<br>';
  else h += part(S.stage[i], S.mb[i], k) + '<br>';
  h += 'rank ' + r + ', step ' + S.slot[i] + '<br>';
  h += '<span class="times">start <span class="start">' + fmt(a, 10) + '</span> \u00b7 end <span class="end">' +
    fmt(b, 10) + '</span> \u00b7 ' + (k === K_RF || k === K_RB ? 'waiting ' : 'duration ') + fmt(b - a) + '</span><br>';
  const d = dependencies(S, i);
  const name = j => actionName(S, j) + ' (rank ' + S.rankOf[j] + ')';
  if (k === K_RF || k === K_RB) {
    h += d.decisive ? 'data from ' + name(d.decisive.i) + ', arrived at ' + fmt(d.decisive.ready)
      : '<span class="muted">its SEND did not run</span>';
  } else {
    const wait = a - d.free;
    if (d.decisive && d.decisive.ready > d.free + 1e-12 && wait > 1e-12)
      h += '<span class="wait">waited ' + fmt(wait) + ' for ' + d.decisive.why + ' ' + name(d.decisive.i) +
        ', ready at ' + fmt(d.decisive.ready) + '</span>';
    else if (d.prev >= 0)
      h += '<span class="muted">no wait: the rank was busy until ' + fmt(d.free) + ' with ' +
        actionName(S, d.prev) + '</span>';
    else h += '<span class="muted">no wait: the first action of its rank</span>';
    for (const x of d.inputs)
      if (x !== d.decisive) h += '<br><span class="muted">' + x.why + ' ' + name(x.i) + ' ready at ' + fmt(x.ready) + '</span>';
  }
  return h;
}

function mousePos(e) {
  const rect = canvas.getBoundingClientRect();
  return { x: e.clientX - rect.left, y: e.clientY - rect.top };
}
let drag = null, moved = false;
canvas.addEventListener('mousedown', e => {
  drag = { x: e.clientX, v0: v0, v1: v1 }; moved = false;
});
window.addEventListener('mouseup', () => { drag = null; canvas.classList.remove('drag'); });
window.addEventListener('mousemove', e => {
  if (!drag) return;
  const dx = e.clientX - drag.x;
  if (Math.abs(dx) > 2) { moved = true; canvas.classList.add('drag'); }
  if (moved) {
    const dt = dx * (drag.v1 - drag.v0) / plotW;
    setView(drag.v0 - dt, drag.v1 - dt);
  }
});
canvas.addEventListener('mousemove', e => {
  if (drag && moved) { tooltip.hidden = true; return; }
  const p = mousePos(e), h = hit(p.x, p.y);
  if (!h) { tooltip.hidden = true; return; }
  tooltip.innerHTML = describe(h.S, h.i);
  tooltip.hidden = false;
  const w = tooltip.offsetWidth, hh = tooltip.offsetHeight;
  let tx = e.clientX + 14, ty = e.clientY + 14;
  if (tx + w > window.innerWidth - 4) tx = e.clientX - w - 14;
  if (ty + hh > window.innerHeight - 4) ty = e.clientY - hh - 14;
  tooltip.style.left = Math.max(4, tx) + 'px';
  tooltip.style.top = Math.max(4, ty) + 'px';
});
canvas.addEventListener('mouseleave', () => { tooltip.hidden = true; });
canvas.addEventListener('click', e => {
  if (moved) return;
  const p = mousePos(e), h = hit(p.x, p.y);
  highlight = h ? [select(h.S, h.i)] : [];
  redraw();
});
function select(S, i) {
  return { S: S, sel: i, inputs: dependencies(S, i).inputs, path: criticalPath(S, i) };
}
canvas.addEventListener('wheel', e => {
  e.preventDefault();
  const p = mousePos(e);
  if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
    const dt = e.deltaX * (v1 - v0) / plotW;
    setView(v0 + dt, v1 + dt);
  } else {
    zoom(Math.pow(1.0015, e.deltaY), p.x >= LEFT ? timeAt(p.x) : undefined);
  }
}, { passive: false });
window.addEventListener('keydown', e => {
  if (e.target && e.target.tagName === 'INPUT') return;
  const w = v1 - v0;
  if (e.key === '+' || e.key === '=') zoom(0.7);
  else if (e.key === '-') zoom(1 / 0.7);
  else if (e.key === '0') setView(0, span * 1.01);
  else if (e.key === 'ArrowLeft') setView(v0 - w * 0.15, v1 - w * 0.15);
  else if (e.key === 'ArrowRight') setView(v0 + w * 0.15, v1 + w * 0.15);
  else if (e.key === 'Escape') { highlight = []; redraw(); }
  else return;
  e.preventDefault();
});
document.getElementById('zoom-in').onclick = () => zoom(0.6);
document.getElementById('zoom-out').onclick = () => zoom(1 / 0.6);
document.getElementById('fit').onclick = () => setView(0, span * 1.01);
document.getElementById('clear').onclick = () => { highlight = []; redraw(); };
// The critical path of the whole step: from the action that ends last, in every schedule (a
// REDUCE_GRAD or a send may end it; at a tie the compute action, whose chain says more).
function lastAction(S) {
  let best = -1;
  for (let i = 0; i < S.count; i++) {
    if (best >= 0 && end(S, i) < end(S, best)) continue;
    if (best < 0 || end(S, i) > end(S, best) || (S.kind[i] <= K_O && S.kind[best] > K_O)) best = i;
  }
  return best;
}
document.getElementById('critical').onclick = () => {
  highlight = [];
  for (const S of SCHED) {
    const i = lastAction(S);
    if (i >= 0) { const h = select(S, i); h.inputs = []; highlight.push(h); }
  }
  redraw();
};

// ---- legend, problems, tables ---------------------------------------------------------------
function buildLegend() {
  const used = new Set();
  for (const S of SCHED) for (let i = 0; i < S.count; i++) used.add(S.kind[i]);
  const el = document.getElementById('legend');
  const item = (colors, label) => {
    const s = document.createElement('span');
    s.innerHTML = colors.map(c => '<span class="sw" style="background:' + css(c) + '"></span>').join('') + label;
    el.appendChild(s);
  };
  const seen = new Set();
  for (const k of [0, 1, 2, 3, 4, 7, 8, 5, 6, 11]) {
    if (!used.has(k) && !(k === 7 && used.has(9)) && !(k === 8 && used.has(10))) continue;
    const label = k === 7 ? 'SEND' : k === 8 ? 'RECV (posted \u2192 data arrived)' : NAMES[k] + (k <= K_O ? ' (' + CODES[k] + ')' : '');
    if (seen.has(label)) continue;
    seen.add(label);
    item([BASE[k]], label);
  }
  const V = Math.max(...SCHED.map(S => S.stagesPerRank));
  if (V > 1) item([0, V - 1].map(c => chunkColor(0, c, V)), 'stage chunk 0 \u2192 ' + (V - 1) + ' (shade)');
  item([IDLE], 'idle');
  const hl = document.createElement('span');
  hl.innerHTML = '<span class="sw" style="border:2px solid #ff9f1c;width:9px;height:9px"></span>inputs' +
    ' &nbsp;<span class="sw" style="border:2px solid #d62728;width:9px;height:9px"></span>critical path';
  el.appendChild(hl);
}
function buildProblems() {
  const el = document.getElementById('problems');
  for (const S of SCHED)
    for (const p of S.problems) {
      const d = document.createElement('div');
      d.className = 'problem';
      d.textContent = S.name + ': ' + p.message;
      el.appendChild(d);
    }
}
function cell(value, text) {
  const td = document.createElement('td');
  if (value !== null && value !== undefined) td.dataset.value = String(value);
  td.textContent = text !== undefined ? text : fmt(value);
  return td;
}
function makeTable(id, headings, rows) {
  const table = document.getElementById(id);
  const thead = document.createElement('thead'), tr = document.createElement('tr');
  headings.forEach((h, c) => {
    const th = document.createElement('th');
    th.textContent = h[0]; th.dataset.field = h[1];
    th.onclick = () => sortTable(table, c, th);
    tr.appendChild(th);
  });
  thead.appendChild(tr); table.appendChild(thead);
  const tbody = document.createElement('tbody');
  for (const r of rows) tbody.appendChild(r);
  table.appendChild(tbody);
}
function sortTable(table, c, th) {
  const asc = !th.classList.contains('asc');
  for (const x of table.querySelectorAll('th')) x.classList.remove('asc', 'desc');
  th.classList.add(asc ? 'asc' : 'desc');
  const tbody = table.tBodies[0], rows = Array.from(tbody.rows);
  const key = tr => { const td = tr.cells[c]; return td.dataset.value !== undefined ? td.dataset.value : td.textContent; };
  rows.sort((a, b) => {
    const x = key(a), y = key(b), nx = Number(x), ny = Number(y);
    const d = (x !== '' && y !== '' && !isNaN(nx) && !isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
    return asc ? d : -d;
  });
  for (const r of rows) tbody.appendChild(r);
}
function buildTables() {
  const srows = [], rrows = [];
  SCHED.forEach((S, si) => {
    const tr = document.createElement('tr');
    tr.dataset.schedule = si;
    if (S.status !== 'ok') tr.className = 'bad';
    const gap = S.lowerBound !== null ? (S.makespan - S.lowerBound) / S.lowerBound : null;
    tr.append(cell(S.name, S.name), cell(S.ranks), cell(S.stagesPerRank), cell(S.microbatches),
      cell(S.count), cell(S.makespan), cell(S.ideal), cell(S.bubbleRatio, fmt(S.bubbleRatio, 4)),
      cell(S.bubbleFraction, pct(S.bubbleFraction)), cell(S.memMax),
      cell(S.lowerBound), cell(gap, gap === null ? '\u2013' : pct(gap)), cell(S.status, S.status));
    const fields = ['name', 'ranks', 'stages_per_rank', 'microbatches', 'actions', 'makespan', 'ideal',
      'bubble_ratio', 'bubble_fraction', 'peak_activations', 'lower_bound', 'gap', 'status'];
    fields.forEach((f, c) => { tr.cells[c].dataset.field = f; });
    srows.push(tr);
    for (const R of S.rankSummary) {
      const rr = document.createElement('tr');
      rr.dataset.schedule = si; rr.dataset.rank = R.rank;
      if (S.problems.some(p => p.rank === R.rank)) rr.className = 'bad';
      rr.append(cell(S.name, S.name), cell(R.rank), cell(R.busy), cell(R.idle),
        cell(R.bubble_fraction, pct(R.bubble_fraction)), cell(R.comm_busy), cell(R.peak_activations),
        cell(R.peak_activations_at), cell(R.peak_memory));
      ['name', 'rank', 'busy', 'idle', 'bubble_fraction', 'comm_busy', 'peak_activations',
        'peak_activations_at', 'peak_memory'].forEach((f, c) => { rr.cells[c].dataset.field = f; });
      rrows.push(rr);
    }
  });
  makeTable('schedules-table', [['schedule', 'name'], ['ranks', 'ranks'], ['V', 'stages_per_rank'],
    ['microbatches', 'microbatches'], ['actions', 'actions'], ['makespan', 'makespan'],
    ['ideal', 'ideal'], ['bubble ratio', 'bubble_ratio'], ['idle', 'bubble_fraction'],
    ['peak act.', 'peak_activations'], ['lower bound', 'lower_bound'], ['gap', 'gap'],
    ['status', 'status']], srows);
  makeTable('ranks-table', [['schedule', 'name'], ['rank', 'rank'], ['busy', 'busy'], ['idle', 'idle'],
    ['bubble', 'bubble_fraction'], ['comm busy', 'comm_busy'], ['peak act.', 'peak_activations'],
    ['peak at', 'peak_activations_at'], ['peak memory', 'peak_memory']], rrows);
}

buildLegend();
buildProblems();
buildTables();
window.addEventListener('resize', resize);
resize();

// For tests and scripts: the data and a few questions about the drawing.
window.ppsched = {
  schedules: SCHED,
  scriptMs: performance.now() - t_begin, // parsing the data, building the lanes, first frame
  readyAt: performance.now(),             // since the navigation started
  // One full frame drawn now, in ms (what a pan or zoom step costs).
  timeDraw: () => { const t = performance.now(); draw(); return performance.now() - t; },
  actionName: (s, i) => actionName(SCHED[s], i),
  memoryMax: (s, r) => SCHED[s].memory[r].max,
  find: (s, rank, name) => {
    const S = SCHED[s];
    for (let i = S.rankStart[rank]; i < S.rankStart[rank + 1]; i++) if (actionName(S, i) === name) return i;
    return -1;
  },
  // The page coordinates of the middle of action i of schedule s (for a synthetic hover).
  point: (s, i) => {
    const L = layout[s], S = L.S, r = S.rankOf[i], lane = lane_of(S.kind[i]);
    const rect = canvas.getBoundingClientRect();
    let y = L.rowsTop + r * L.row + L.lane / 2;
    if (lane) y = L.rowsTop + r * L.row + L.lane + 1 + (lane === 1 ? L.comm / 4 : 3 * L.comm / 4);
    return { x: rect.left + (X(start(S, i)) + X(end(S, i))) / 2, y: rect.top + y };
  },
  setView: setView,
  view: () => [v0, v1],
  criticalPath: (s, i) => criticalPath(SCHED[s], i),
  lastAction: s => lastAction(SCHED[s]), // where the critical path button starts
  dependencies: (s, i) => dependencies(SCHED[s], i),
  ready: true,
};
})();
)js";

} // namespace ppsched::detail::html
