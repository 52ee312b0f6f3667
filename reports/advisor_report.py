"""The workload advisor's answers as a reader sees them: the advisor page's data
(common workloads predicted on every target, the form's grid, kept between builds)
and the CLI's text."""

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from reports import advisor, job_profile
from reports.advisor import seconds_words
from reports.job_profile import AdvisorError, Profile, description_profile
from scratchbench import selfscale as ss
from scratchbench import units
from scratchbench.units import GIB, KIB, MIB

# ---- the page ---------------------------------------------------------------------------------
#: Common workloads the page predicts for every target (data, not code).
CLASSES_FILE = Path(__file__).with_name("advisor_workloads.yaml")
#: The page's form: each field's choices (per node), the grid its throughputs are
#: computed at.  A description with these values gets the same answer from the CLI.
FORM_GRID: dict[str, list[Any]]
FORM_GRID = {
    "request_size": [4 * KIB, 64 * KIB, MIB, 16 * MIB],
    "sequential_fraction": [0.0, 0.5, 1.0],
    "processes_per_node": [1, 2, 4, 8, 16, 32, 64],
    "footprint_per_node": [64 * MIB, GIB, 16 * GIB, 256 * GIB],
}


def load_classes(path: Path = CLASSES_FILE) -> list[tuple[str, str, Profile]]:
    """[(name, words, Profile)] of the workload classes file."""
    try:
        entries = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise AdvisorError(f"{path}: unreadable workload classes ({exc})") from None
    if not isinstance(entries, list):
        raise AdvisorError(f"{path}: expected a list of workload classes")
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or set(entry) != {"name", "words", "description"}:
            raise AdvisorError(f"{path}: class {i + 1}: expected name, words and description")
        out.append(
            (
                entry["name"],
                entry["words"],
                description_profile(entry["description"], f"{path.name}: {entry['name']}"),
            )
        )
    return out


#: the directions a grid point predicts, in the order the kept terms follow
DIRECTIONS = ("read", "write")


def _grid_profiles() -> list[Profile]:
    """The form's grid without its request sizes (one Profile per sequential fraction,
    processes and footprint per node, in the page's order)."""
    return [
        Profile(
            source="form",
            processes=procs,
            unique_bytes=unique,
            consecutive={"read": seq, "write": seq},
        )
        for seq in FORM_GRID["sequential_fraction"]
        for procs in FORM_GRID["processes_per_node"]
        for unique in FORM_GRID["footprint_per_node"]
    ]


#: per grid profile, a model's terms: request_rate_terms of each direction, then its
#: throughput at each request size of each direction
TERMS_PER_PROFILE = 3 * len(DIRECTIONS) + len(DIRECTIONS) * len(FORM_GRID["request_size"])


def model_terms(model: ss.Model) -> list[float]:
    """What the form's grid needs of one model whatever the stored rates (which change
    every night): TERMS_PER_PROFILE numbers per _grid_profiles() profile, in order."""
    terms: list[float] = []
    for profile in _grid_profiles():
        for d in DIRECTIONS:
            terms.extend(advisor.request_rate_terms(profile, d, model))
        for d in DIRECTIONS:
            terms.extend(
                model.predict(advisor.workload_of(profile, size, d, model))
                for size in FORM_GRID["request_size"]
            )
    return terms


def model_distances(model: ss.Model) -> list[list[float | None]]:
    """How far each point of the form's grid lies outside what the model measured and
    the error measured at that distance (advisor.distance_terms), in the grid's order
    (profile, then request size)."""
    far = []
    for profile in _grid_profiles():
        for size in FORM_GRID["request_size"]:
            profile.size_classes = {"read": [[size, MIB]], "write": [[size, MIB]]}
            far.append(advisor.distance_terms(profile, model))
    return far


def _grid_throughputs(
    figures: advisor.TargetFigures, kept: "PredictionCache | None" = None
) -> dict[str, dict[str, Any]]:
    """{"size|seq|procs|footprint": {"read": [bytes/s per model], "write": [...],
    "extrapolation": factor, "far_band": band, "far_error": error, "far_workloads": n}}: what the models
    predict at every point of the form's grid, newest model first, each the throughput of advisor.class_seconds (requests charged at
    the request rate as the CLI charges them), and how far the point lies outside what
    the newest model measured.  The models' terms come from ``kept`` when given (a
    night adds one model: only its terms are computed), the stored rates applied here."""
    stored = {
        d: advisor._request_rate_of(figures, role) for d, role in advisor.REQUEST_ROLES.items()
    }
    shapes = advisor.request_shapes(figures)
    models = [m for _, m in figures.models]
    terms = [kept.terms(m) if kept else model_terms(m) for m in models]
    far = kept.distances(models[0]) if kept else model_distances(models[0])
    sizes = FORM_GRID["request_size"]
    out: dict[str, dict[str, Any]] = {}
    for n, profile in enumerate(_grid_profiles()):
        base = n * TERMS_PER_PROFILE
        # (request rate at the smallest size measured, that size) per direction and model
        rates = {
            d: [
                (
                    advisor.rate_of_terms(t[base + 3 * j : base + 3 * j + 3], stored[d]),
                    t[base + 3 * j + 2],
                )
                for t in terms
            ]
            for j, d in enumerate(DIRECTIONS)
        }
        for i, size in enumerate(sizes):
            seq = profile.consecutive["read"]
            key = f"{size}|{seq:g}|{profile.processes}|{profile.unique_bytes}"
            out[key] = {
                d: [
                    MIB
                    / advisor.seconds_of(
                        t[base + 3 * len(DIRECTIONS) + j * len(sizes) + i],
                        advisor.request_rate_at_size(rate, size, smallest, shapes[d]),
                        size,
                        MIB,
                        profile.nodes,
                        advisor.REQUEST_COST,
                    )[0]
                    for t, (rate, smallest) in zip(terms, rates[d])
                ]
                for j, d in enumerate(DIRECTIONS)
            }
            factor, band, error, count = far[n * len(sizes) + i]
            out[key].update(
                extrapolation=factor, far_band=band, far_error=error, far_workloads=count
            )
    return out


class _UsedPredictions(dict[str, float]):
    """A model's predictions this build used: those it computed and the kept ones it
    looked up (Model.predict asks ``key in memo`` first), so the file keeps what the
    next build asks for and drops the grid points that model_terms now keeps."""

    def __init__(self, kept: object) -> None:
        super().__init__()
        self.kept = kept if isinstance(kept, dict) else {}

    def __contains__(self, key: object) -> bool:
        if super().__contains__(key):
            return True
        if isinstance(key, str) and key in self.kept:
            self[key] = self.kept[key]
            return True
        return False


class PredictionCache:
    """The models' predictions kept between page builds, in one JSON file under the
    pages' cache directory: a night adds one model per target and environment, and only
    its points are computed (the form's grid is thousands of predictions per model).
    Two parts, both keyed by a digest of each model (its curves, regimes, knee and
    measured points): each model's predictions by point, and its terms on the form's
    grid (model_terms and model_distances; the stored rates, which change every night,
    are applied at each build).  The prediction code itself (scratchbench/selfscale.py
    and the advisor's modules) is part of the key: a change there starts afresh; an
    unreadable file or entry is rebuilt."""

    CODE = (Path(ss.__file__), Path(advisor.__file__), Path(__file__), Path(job_profile.__file__))

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        digest = hashlib.sha256()
        for code in self.CODE:
            digest.update(code.read_bytes())
        self.code = digest.hexdigest()[:16]
        try:
            kept = json.loads(self.path.read_text())
            fresh = kept.get("code") != self.code
            self.models = {} if fresh else kept["models"]
            self.grids = {} if fresh else kept["grids"]
            if not isinstance(self.models, dict) or not isinstance(self.grids, dict):
                raise TypeError
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.models, self.grids = {}, {}
        self.used: dict[str, _UsedPredictions] = {}
        self.grids_used: dict[str, dict[str, list[float]]] = {}
        self.digests: dict[int, str] = {}  # id(model) -> its digest, for the models attached

    def attach(self, figures: Mapping[str, advisor.TargetFigures]) -> None:
        """Every model of every target (leading and other environments) reads and
        fills its memo here."""
        for t in figures.values():
            for _, model in t.models + [m for ms in t.other_models.values() for m in ms]:
                fp = hashlib.sha256(
                    json.dumps(model.as_dict(), sort_keys=True).encode()
                ).hexdigest()[:32]
                self.digests[id(model)] = fp
                kept = self.models.get(fp)
                memo = self.used.setdefault(fp, _UsedPredictions(kept))
                model.remember_predictions(memo)

    def _kept(
        self,
        model: ss.Model,
        part: str,
        compute: Callable[[ss.Model], list[Any]],
        length: int,
    ) -> list[Any]:
        fp = self.digests[id(model)]
        entry = self.grids_used.setdefault(fp, {})
        if part not in entry:
            kept = self.grids.get(fp)
            found = kept.get(part) if isinstance(kept, dict) else None
            if isinstance(found, list) and len(found) == length:
                entry[part] = found
            else:
                entry[part] = compute(model)
        return entry[part]

    def terms(self, model: ss.Model) -> list[float]:
        """model_terms of an attached model, kept or computed."""
        return self._kept(model, "terms", model_terms, TERMS_PER_PROFILE * len(_grid_profiles()))

    def distances(self, model: ss.Model) -> list[list[float | None]]:
        """model_distances of an attached model, kept or computed."""
        return self._kept(
            model,
            "distance",
            model_distances,
            len(_grid_profiles()) * len(FORM_GRID["request_size"]),
        )

    def save(self) -> None:
        """Only the models and predictions this build used (the file does not grow with
        the history); written whole and renamed, so a build that dies never leaves half
        a file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(
            json.dumps({"code": self.code, "models": self.used, "grids": self.grids_used})
        )
        tmp.replace(self.path)


def _first_pass_of(figures: advisor.TargetFigures) -> dict[str, float] | None:
    """The form's first-pass terms (advisor.first_pass_rates), or None."""
    rates = advisor.first_pass_rates(figures)
    return {"dropped": rates[0].value, "rate": rates[1].value} if rates else None


def page_data(
    conn: sqlite3.Connection,
    classes_path: Path = CLASSES_FILE,
    cache_dir: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """What the advisor page shows: the common workloads predicted here, and for the
    form, each target's model throughputs on the form's grid and its stored rates.  The
    caller holds the store's snapshot (a page build reads one).  ``cache_dir``: where
    the predictions are kept between builds (PredictionCache); none, all computed."""
    figures = advisor.stored_figures(conn)
    cache = PredictionCache(Path(cache_dir) / "advisor-predictions.json") if cache_dir else None
    if cache:
        cache.attach(figures)
    classes = []
    for name, words, profile in load_classes(classes_path):
        result = advisor.predict_all(profile, figures)
        classes.append({"name": name, "words": words, "result": result})
    targets = []
    for name in sorted(figures):
        t = figures[name]
        dates = [d for d, _ in t.models] + [r.date for rs in t.rates.values() for r in rs]
        targets.append(
            {
                "name": name,
                "kind": t.kind,
                "figures_from": min(dates) if dates else None,
                "figures_to": max(dates) if dates else None,
                "model_dates": [d for d, _ in t.models],
                "throughput": _grid_throughputs(t, cache) if t.models else {},
                "measured": t.models[0][1].measured_range() if t.models else None,
                "errors": {role: r.value for role, r in t.errors.items()},
                "rates": {role: [r.as_dict() for r in rs] for role, rs in t.rates.items()},
                "first_pass": _first_pass_of(t),
            }
        )
    if cache:
        cache.save()
    return {
        "classes": classes,
        "targets": targets,
        "grid": FORM_GRID,
        "parts": list(advisor.PARTS),
        "recent_runs": advisor.RECENT_RUNS,
        "point_runs": advisor.POINT_RUNS,
        "keys": {k: words for k, (_, words) in job_profile.DESCRIPTION_KEYS.items()},
    }


# ---- words ----------------------------------------------------------------------------------
def date_words(ts: float | None) -> str:
    return f"{units.date_time(ts)} UTC" if ts else "-"


def interval_words(part: Mapping[str, Any]) -> str:
    if part.get("seconds") is None:
        return ""
    if part.get("low") is None:
        return "no spread yet (1 run)" if part.get("runs") == 1 else ""
    return f"{seconds_words(part['low'])} to {seconds_words(part['high'])}"


def format_advice(result: Mapping[str, Any]) -> str:
    """The advice as text: the workload, then a table per target."""
    p = result["profile"]
    lines = [f"Workload ({p['source']}): {result['profile_words']}"]
    if p.get("observed_io_s") is not None:
        lines.append(
            f"  the log says: {seconds_words(p['observed_io_s'])} of I/O at the "
            f"slowest rank (Darshan's estimate), run time "
            f"{seconds_words(p.get('run_time_s'))}"
        )
    lines += [f"  note: {n}" for n in p.get("notes") or []]
    for t in result["targets"]:
        lines.append("")
        span = (
            date_words(t["figures_from"])
            if t["figures_from"] == t["figures_to"]
            else f"{date_words(t['figures_from'])} to {date_words(t['figures_to'])}"
        )
        lines.append(
            f"{t['target']}" + (f" ({t['kind']})" if t["kind"] else "") + f": figures of {span}"
        )
        rows = [("part", "predicted", "interval (recent runs)", "rests on")]
        for name in advisor.PARTS + ("total",):
            part = t["total"] if name == "total" else t["parts"][name]
            if part["seconds"] is None:
                rows.append((name, "-", "", part["missing"]))
                continue
            rests = part["rests_on"]
            if name == "data" and part["extra"].get("error_words"):
                rests += f"; {part['extra']['error_words']}"
            rows.append((name, seconds_words(part["seconds"]), interval_words(part), rests))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        for r in rows:
            lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r[:3], widths)) + "  " + r[3])
        for name in advisor.PARTS:
            for note in t["parts"][name]["notes"]:
                lines.append(f"  {name}: {note}")
    lines.append("")
    lines.append(f"Use: {result['recommendation']['words']}")
    return "\n".join(lines)
