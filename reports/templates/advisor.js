// The advisor page's form: the same arithmetic as reports/advisor.py (predict_target),
// on throughputs the page builder computed with each target's self-scaling models at the
// form's grid points, and on the stored rates.  A description with the form's values
// gets the same answer from `scratchbench advise`.
(function () {
  "use strict";
  var KIB = 1024, MIB = 1024 * KIB, GIB = 1024 * MIB, TIB = 1024 * GIB;
  var UNITS = {MiB: MIB, GiB: GIB, TiB: TIB};
  var data = JSON.parse(document.getElementById("advisor-data").textContent);
  var form = document.getElementById("advisor-form");

  function sizeWords(n) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], v = n, i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (v === Math.floor(v) ? v.toFixed(0) : v.toPrecision(3)) + " " + units[i];
  }
  function secondsWords(s) {
    if (s === null || s === undefined) return "-";
    if (s < 1e-3) return s ? (s * 1e6).toFixed(0) + " us" : "0 s";
    if (s < 1) return Number((s * 1e3).toPrecision(3)) + " ms";
    if (s < 60) return Number(s.toPrecision(3)) + " s";
    var total = Math.round(s), h = Math.floor(total / 3600), m = Math.floor(total % 3600 / 60),
        sec = total % 60, out = [];
    if (h) out.push(h + " h");
    if (m) out.push(m + " min");
    if (sec) out.push(sec + " s");
    return out.join(" ") || "0 s";
  }
  function number(name, integer) {
    var el = form.elements[name], v = Number(el.value);
    if (el.value === "" || !isFinite(v) || v < 0 || (integer && v !== Math.floor(v))) {
      throw new Error(name.replace(/_/g, " ") + ": expected " +
                      (integer ? "a whole number" : "a number") + " of at least 0");
    }
    return v;
  }

  // the form as a description (the YAML keys of reports/advisor.py)
  function description() {
    var d = {};
    var nodes = number("nodes", true), ppn = Number(form.elements.processes_per_node.value);
    if (nodes < 1) throw new Error("nodes: expected at least 1");
    var rf = number("read_fraction");
    if (rf > 1) throw new Error("share of requests that read: expected 0 to 1");
    d.processes = nodes * ppn;
    d.nodes = nodes;
    d.bytes = Math.trunc(number("bytes") * UNITS[form.elements.bytes_unit.value]);
    d.read_fraction = rf;
    d.request_size = Number(form.elements.request_size.value);
    d.sequential_fraction = Number(form.elements.sequential_fraction.value);
    d.footprint = Number(form.elements.footprint_per_node.value) * nodes;
    d.files = number("files", true);
    d.files_written = number("files_written", true);
    if (d.files_written > d.files) throw new Error("files written: more than the files opened");
    d.opens = number("opens", true);
    d.stats = number("stats", true);
    [["in", "stage_in"], ["out", "stage_out"]].forEach(function (leg) {
      var b = Math.trunc(number(leg[1] + "_bytes") * GIB), f = number(leg[1] + "_files", true);
      if (b || f) d[leg[1]] = {bytes: b, files: Math.max(f, 1)};
    });
    return d;
  }
  function yamlOf(d) {
    return Object.keys(d).map(function (k) {
      var v = d[k];
      return typeof v === "object" ? k + ": {bytes: " + v.bytes + ", files: " + v.files + "}"
                                   : k + ": " + v;
    }).join("\n") + "\n";
  }

  function part(seconds, low, high, runs, restsOn) {
    return {seconds: seconds, low: low, high: high, runs: runs, rests_on: restsOn,
            missing: "", notes: []};
  }
  function missing(words) { var p = part(null, null, null, 0, ""); p.missing = words; return p; }
  // "1 file", "2 files": as count_words in reports/advisor.py
  function countWords(n, one, many) {
    return n.toLocaleString("en") + " " + (n === 1 ? one : (many || one + "s"));
  }
  function counted(items) {
    var s = 0, lo = 0, hi = 0, runs = [], rests = [];
    items.forEach(function (it) {
      if (!it.count) return;
      s += it.count / it.rate.value; lo += it.count / it.rate.high; hi += it.count / it.rate.low;
      runs.push(it.rate.runs);
      rests.push(countWords(it.count, it.words[0], it.words[1]) + " at " +
                 Math.round(it.rate.value).toLocaleString("en") + "/s");
    });
    var spread = runs.length > 0 && Math.min.apply(null, runs) > 1;
    return part(s, spread ? lo : null, spread ? hi : null,
                runs.length ? Math.min.apply(null, runs) : 0, rests.join("; ") || "nothing to do");
  }
  // the prediction from per-run values: their median, as the CLI's (reports/advisor.py)
  function median(values) {
    var v = values.slice().sort(function (a, b) { return a - b; }), n = v.length;
    return n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }
  function lead(t, role) { var r = t.rates[role]; return r && r.length ? r[0] : null; }

  function predict(d, t) {
    var parts = {}, readBytes = Math.round(d.bytes * d.read_fraction),
        writeBytes = d.bytes - readBytes;
    // data
    if (!t.model_dates.length) parts.data = missing("no self-scaling curves yet");
    else if (!d.bytes) parts.data = part(0, null, null, t.model_dates.length, "no data moved");
    else {
      var key = d.request_size + "|" + d.sequential_fraction + "|" + d.processes / d.nodes +
                "|" + d.footprint / d.nodes, tp = t.throughput[key];
      // reads: a first pass over the files opened at the first-pass rate where a new
      // open drops the cache (FirstPass in reports/advisor.py)
      var fp = t.first_pass, share = fp && d.opens && readBytes ?
          Math.min(1, (d.footprint || readBytes) / readBytes) * Math.min(1, fp.dropped) : 0;
      var values = t.model_dates.map(function (_, m) {
        var read = readBytes ? readBytes / (tp.read[m] * d.nodes) : 0;
        if (share) read = (1 - share) * read + share * Math.max(read, readBytes / (fp.rate * d.nodes));
        return read + (writeBytes ? writeBytes / (tp.write[m] * d.nodes) : 0);
      });
      var many = values.length > 1, point = median(values.slice(0, data.point_runs));
      parts.data = part(point, many ? Math.min.apply(null, values) : null,
                        many ? Math.max.apply(null, values) : null, values.length,
                        "self-scaling model, " + Math.round(d.bytes / point / MIB)
                          .toLocaleString("en") + " MiB/s predicted");
      if (share) parts.data.rests_on += "; the reads' first pass over the files opened at " +
        Math.round(fp.rate * d.nodes / MIB).toLocaleString("en") + " MiB/s (a new open drops " +
        Math.round(100 * fp.dropped) + "% of a file's cached pages here)";
      // as error_words in reports/advisor.py: the in-range error only inside the range
      if (tp.extrapolation > 1.01) {
        parts.data.rests_on += "; extrapolated " + tp.extrapolation.toLocaleString("en",
          {minimumFractionDigits: 1, maximumFractionDigits: 1}) +
          "x beyond what was measured; " + (tp.far_error === null ?
          "no error known at that distance" : "median error " +
          Math.round(100 * tp.far_error) + "% on " + tp.far_workloads + " held-out workload" +
          (tp.far_workloads === 1 ? "" : "s") + " up to " + tp.far_band +
          "x past the measured range");
      } else if (t.errors.model_error_median !== undefined) {
        parts.data.rests_on += "; inside the measured range: validation error median " +
          Math.round(100 * t.errors.model_error_median) + "%" +
          (t.errors.model_error_median_low !== undefined &&
           t.errors.model_error_median_high !== undefined ? " (" +
           Math.round(100 * t.errors.model_error_median_low) + "% to " +
           Math.round(100 * t.errors.model_error_median_high) + "% with 90% confidence)" : "") +
          (t.errors.model_error_max !== undefined ? ", max " +
           Math.round(100 * t.errors.model_error_max) + "%" : "");
      }
    }
    // metadata
    var creations = d.files_written, others = Math.max(0, d.opens - creations), items = [];
    var needed = [[creations, "creations_per_s", ["creation"]],
                  [others, "opens_per_s", ["open of an existing file", "opens of existing files"]],
                  [d.stats, "stats_per_s", ["stat"]]];
    for (var i = 0; i < needed.length; i++) {
      var rate = lead(t, needed[i][1]);
      if (needed[i][0] && !rate) {
        parts.metadata = missing("no stored " + needed[i][1].replace(/_/g, " "));
        break;
      }
      if (rate) items.push({count: needed[i][0], rate: rate, words: needed[i][2]});
    }
    if (!parts.metadata) parts.metadata = counted(items);
    // deletion
    var deletes = t.rates.deletions_per_s || [];
    if (!d.files_written) parts.deletion = part(0, null, null, 0, "the job writes no file");
    else if (!deletes.length) parts.deletion = missing("no stored deletion rate");
    else {
      parts.deletion = counted([{count: d.files_written, rate: deletes[0], words: ["deletion"]}]);
      var fastest = deletes.reduce(function (a, b) { return b.value > a.value ? b : a; });
      if (fastest !== deletes[0] && fastest.value > deletes[0].value * 1.1) {
        parts.deletion.notes.push("with " + (fastest.variant || fastest.label) + ": " +
                                  secondsWords(d.files_written / fastest.value));
      }
    }
    // staging
    if (!d.stage_in && !d.stage_out) parts.staging = part(0, null, null, 0, "the job does not stage");
    else {
      var s = 0, lo = 0, hi = 0, runs = [], rests = [], notes = [], gap = null;
      ["in", "out"].forEach(function (leg) {
        var amount = d["stage_" + leg];
        if (!amount || gap) return;
        var bw = lead(t, "stage_" + leg + "_bytes_per_s"), fr = lead(t, "stage_" + leg + "_files_per_s");
        if (!bw || !fr) { gap = "no stored stage-" + leg + " rates"; return; }
        // a copy pays for each file and for each byte, its first bytes (as many as the
        // staging check's burst: the page cache absorbs them) at their own bandwidth
        var burst = lead(t, "stage_" + leg + "_first_bytes_per_s"), burstBytes = lead(t, "stage_first_bytes");
        var first = burst && burstBytes ? Math.min(amount.bytes, burstBytes.value) : 0;
        if (first && amount.bytes > first) {
          notes.push("stage-" + leg + ": " + sizeWords(amount.bytes - first) + " past the " +
                     sizeWords(first) + " burst at the sustained bandwidth; how much more a " +
                     "node's page cache absorbs varies with its free memory");
        }
        var largest = lead(t, "stage_largest_bytes");
        if (largest && amount.bytes > largest.value) {
          notes.push("stage-" + leg + ": " + sizeWords(amount.bytes) + " is " +
                     (amount.bytes / largest.value).toFixed(1) + "x the largest copy the " +
                     "staging check timed (" + sizeWords(largest.value) + "): its sustained " +
                     "bandwidth is carried past what was measured");
        }
        [[amount.files, fr], [first, burst], [amount.bytes - first, bw]].forEach(function (cr) {
          if (!cr[0]) return;
          s += cr[0] / cr[1].value; lo += cr[0] / cr[1].high; hi += cr[0] / cr[1].low;
          runs.push(cr[1].runs);
        });
        rests.push(leg + ": " + sizeWords(amount.bytes) + " in " + countWords(amount.files, "file"));
      });
      if (gap) parts.staging = missing(gap);
      else {
        var spread = runs.length > 0 && Math.min.apply(null, runs) > 1;
        parts.staging = part(s, spread ? lo : null, spread ? hi : null,
                             runs.length ? Math.min.apply(null, runs) : 0, rests.join("; "));
        parts.staging.notes = notes;
      }
    }
    // total
    var names = data.parts, gaps = names.filter(function (n) { return parts[n].seconds === null; });
    var total;
    if (gaps.length) total = missing("incomplete: " + gaps.join(", ") + " cannot be predicted");
    else {
      var withSpread = names.every(function (n) { return parts[n].low !== null || parts[n].seconds === 0; });
      function sum(f) { return names.reduce(function (a, n) { return a + f(parts[n]); }, 0); }
      total = part(sum(function (p) { return p.seconds; }),
                   withSpread ? sum(function (p) { return p.low !== null ? p.low : p.seconds; }) : null,
                   withSpread ? sum(function (p) { return p.high !== null ? p.high : p.seconds; }) : null,
                   0, "");
    }
    return {target: t.name, parts: parts, total: total};
  }

  function recommend(predictions) {
    var complete = predictions.filter(function (p) { return p.total.seconds !== null; });
    if (!complete.length) return "no target has every figure the prediction needs";
    complete.sort(function (a, b) { return a.total.seconds - b.total.seconds; });
    var best = complete[0];
    if (complete.length === 1) return best.target + ": the only target with a complete prediction";
    var runner = complete[1];
    if (best.total.high === null || runner.total.low === null) {
      return "fastest predicted: " + best.target + ", but without an interval (one stored " +
             "run), so no target can be named best yet";
    }
    if (best.total.high < runner.total.low) {
      return best.target + ": its slowest prediction beats the fastest of " + runner.target +
             " (recent runs)";
    }
    return "no clear winner: " + best.target + " and " + runner.target + " overlap over recent runs";
  }

  function cell(tr, text, cls) {
    var td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }
  function render(predictions, advice) {
    var out = document.getElementById("advisor-result");
    out.textContent = "";
    predictions.forEach(function (p) {
      var h = document.createElement("h4");
      h.textContent = p.target;
      out.appendChild(h);
      var table = document.createElement("table");
      table.className = "advisor-parts";
      table.dataset.target = p.target;
      var head = table.createTHead().insertRow();
      ["part", "predicted", "recent runs", "rests on"].forEach(function (w) {
        var th = document.createElement("th"); th.textContent = w; head.appendChild(th);
      });
      var body = table.createTBody();
      data.parts.concat(["total"]).forEach(function (name) {
        var q = name === "total" ? p.total : p.parts[name], tr = body.insertRow();
        tr.dataset.part = name;
        tr.dataset.seconds = q.seconds === null ? "" : String(q.seconds);
        tr.dataset.low = q.low === null ? "" : String(q.low);
        tr.dataset.high = q.high === null ? "" : String(q.high);
        cell(tr, name);
        cell(tr, q.seconds === null ? "–" : secondsWords(q.seconds), "num");
        cell(tr, q.low !== null ? secondsWords(q.low) + " to " + secondsWords(q.high)
                 : (q.runs === 1 ? "1 run: no spread yet" : ""), "num");
        cell(tr, q.seconds === null ? q.missing
                 : [q.rests_on].concat(q.notes).filter(Boolean).join("; "));
      });
      out.appendChild(table);
    });
    var use = document.createElement("p");
    use.id = "advisor-use";
    use.innerHTML = "<b>Use:</b> ";
    use.appendChild(document.createTextNode(advice));
    out.appendChild(use);
  }

  function update() {
    var error = document.getElementById("advisor-error");
    try {
      var d = description();
      error.textContent = "";
      document.getElementById("advisor-yaml").textContent = yamlOf(d);
      var predictions = data.targets.map(function (t) { return predict(d, t); });
      render(predictions, recommend(predictions));
    } catch (e) {
      error.textContent = e.message;
    }
  }
  form.addEventListener("input", update);
  form.addEventListener("change", update);
  update();
})();
