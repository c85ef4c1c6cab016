#pragma once
/// \file io/detail/html_report_assets.hpp
/// The style, page skeleton and script of `io::write_html_report`, as raw strings (the script in
/// two parts: html_report_script_model.hpp, html_report_script_view.hpp). The script is
/// hand-written (no library): a report must open offline from `file://` with nothing fetched,
/// and what it needs (a canvas Gantt with level-of-detail, tooltips, dependency walks, line
/// charts, sortable tables) is a few hundred lines, smaller than any charting library that
/// would still need a Gantt and a dependency model added.

#include <string_view>

#include "ppsched/io/detail/html_report_script_model.hpp"
#include "ppsched/io/detail/html_report_script_view.hpp"

namespace ppsched::detail::html {

/// The page's style sheet.
inline constexpr std::string_view style = R"css(
body{font-family:'DejaVu Sans',Verdana,Arial,sans-serif;margin:0;color:#222;background:#fff}
header{padding:10px 16px 0}
h1{font-size:18px;margin:0 0 4px}
h2{font-size:15px;margin:18px 16px 6px}
#toolbar{position:sticky;top:0;z-index:2;background:#fafafa;border-bottom:1px solid #ddd;
 padding:6px 16px;display:flex;gap:8px;align-items:center;flex-wrap:wrap;font-size:13px}
#toolbar button{font:inherit;padding:2px 10px;border:1px solid #bbb;border-radius:4px;
 background:#fff;cursor:pointer}
#toolbar button:hover{background:#eef3fb}
#toolbar .hint{color:#666;margin-left:auto}
#range{color:#444;font-variant-numeric:tabular-nums;min-width:16em}
#legend{padding:6px 16px;font-size:12px;display:flex;flex-wrap:wrap;gap:4px 14px}
#legend span.sw{display:inline-block;width:12px;height:12px;vertical-align:-2px;margin-right:4px}
#problems{margin:0 16px;font-size:13px}
#problems div{color:#a61b1b;background:#fdecea;border-left:4px solid #c0392b;padding:4px 8px;
 margin:4px 0}
#wrap{position:relative;margin:0 8px}
#chart{display:block;width:100%;cursor:crosshair}
#chart.drag{cursor:grabbing}
#tooltip{position:fixed;z-index:3;pointer-events:none;background:#fff;border:1px solid #999;
 border-radius:4px;box-shadow:0 2px 6px rgba(0,0,0,.2);padding:6px 8px;font-size:12px;
 line-height:1.45;max-width:420px}
#tooltip b{font-size:13px}
#tooltip .wait{color:#a0522d}
#tooltip .muted{color:#666}
table{border-collapse:collapse;margin:0 16px 8px;font-size:13px}
th,td{border-bottom:1px solid #e2e2e2;padding:3px 10px;text-align:right;white-space:nowrap}
th{background:#f3f3f3;cursor:pointer;user-select:none}
th:first-child,td:first-child{text-align:left}
th.asc::after{content:' \25B2';font-size:10px}th.desc::after{content:' \25BC';font-size:10px}
tr.bad td{color:#a61b1b}
footer{color:#777;font-size:11px;margin:12px 16px 20px}
)css";

/// The page between the title and the data: toolbar, legend, problems, canvas, tables.
inline constexpr std::string_view body = R"html(<div id="toolbar">
<button id="zoom-in" title="zoom in (+)">+</button>
<button id="zoom-out" title="zoom out (-)">&minus;</button>
<button id="fit" title="show everything (0)">fit</button>
<button id="critical" title="the chain of actions that decides the makespan">critical path</button>
<button id="clear" title="clear the highlight (Esc)">clear</button>
<span id="range"></span>
<span class="hint">wheel: zoom &middot; drag or &larr; &rarr;: pan &middot; click an action: its inputs and critical path</span>
</div>
<div id="problems"></div>
<div id="legend"></div>
<div id="wrap"><canvas id="chart"></canvas></div>
<div id="tooltip" hidden></div>
<h2>Schedules</h2>
<table id="schedules-table"></table>
<h2>Ranks</h2>
<table id="ranks-table"></table>
<footer>Written by ppsched report. Times are in the cost model's units; memory is activation
memory (parameters are added in the peak memory column). Click a column heading to sort.</footer>
)html";

} // namespace ppsched::detail::html
