"""``python -m bench.compare_commits OLD NEW``: kafkaev at two commits, alternately, on one broker.

OLD and NEW are checkouts with their extensions built (``python setup.py build_ext --inplace``).
Each round runs ``python -m bench --quick --clients kafkaev`` in OLD, then in NEW (the order
swaps every round, so a machine that slows down during the session does not favour either),
against one broker both share. Every scenario's metrics are then compared: a metric is
reported slower only when NEW's best run is worse than OLD's worst, that is, when the gap is
larger than the spread OLD shows between its own runs (the run-to-run noise).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

DEFAULT_ROUNDS = 3
KAFKAEV = "kafkaev"
BENCH_TIMEOUT_S = 900


@dataclass(frozen=True, slots=True)
class Metric:
    scenario: str
    name: str
    unit: str
    higher_is_better: bool


@dataclass(slots=True)
class Figures:
    """One metric's figure from every run of one checkout."""

    values: list[float]

    def best(self, higher_is_better: bool) -> float:
        return max(self.values) if higher_is_better else min(self.values)

    def worst(self, higher_is_better: bool) -> float:
        return min(self.values) if higher_is_better else max(self.values)


def run_bench(checkout: Path, brokers: str, out: Path, scenarios: str | None) -> dict:
    """One quick bench run of kafkaev from ``checkout``; its JSON report."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    chosen = ["--scenarios", scenarios] if scenarios else []
    subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--clients", KAFKAEV, "--brokers", brokers, "--no-chart",
         "--out", str(out), *chosen],
        cwd=checkout, env=env, check=True, timeout=BENCH_TIMEOUT_S,
    )
    [report] = sorted(out.glob("*.json"))
    return json.loads(report.read_text())


def figures_of(report: dict) -> dict[Metric, float]:
    found: dict[Metric, float] = {}
    for scenario, body in report["scenarios"].items():
        for label, subject in body.get("clients", {}).items():
            # kafkaev's entries: "kafkaev", or "kafkaev[on_batch]" where a scenario runs it two ways
            if label.split("[", 1)[0] != KAFKAEV or not subject.get("median"):
                continue
            where = scenario if label == KAFKAEV else f"{scenario} {label[len(KAFKAEV):]}"
            for m in body["metrics"]:
                value = subject["median"].get(m["name"])
                if isinstance(value, (int, float)):
                    found[Metric(where, m["name"], m["unit"], bool(m["higher_is_better"]))] = float(value)
    return found


def compare(old_runs: list[dict[Metric, float]], new_runs: list[dict[Metric, float]]) -> list[str]:
    lines = ["| scenario | metric | old runs | new runs | new/old (medians) | verdict |", "|---|---|---|---|---:|---|"]
    metrics = sorted(set.intersection(*(set(r) for r in old_runs + new_runs)), key=lambda m: (m.scenario, m.name))
    for m in metrics:
        old = Figures([r[m] for r in old_runs])
        new = Figures([r[m] for r in new_runs])
        ratio = statistics.median(new.values) / statistics.median(old.values) if statistics.median(old.values) else 0.0
        if m.higher_is_better:
            slower = new.best(True) < old.worst(True)
            faster = new.worst(True) > old.best(True)
        else:
            slower = new.best(False) > old.worst(False)
            faster = new.worst(False) < old.best(False)
        verdict = "slower beyond noise" if slower else "faster beyond noise" if faster else "within noise"
        lines.append(
            f"| {m.scenario} | {m.name} ({m.unit}) | {', '.join(f'{v:.4g}' for v in old.values)} | "
            f"{', '.join(f'{v:.4g}' for v in new.values)} | {ratio:.3f} | {verdict} |"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="checkout of the older commit, extensions built")
    parser.add_argument("new", type=Path, help="checkout of the newer commit, extensions built")
    parser.add_argument("--brokers", required=True, help="bootstrap of the broker both runs share")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help=f"runs per checkout (default {DEFAULT_ROUNDS})")
    parser.add_argument("--scenarios", help="only these scenarios (names or prefixes, comma-separated)")
    parser.add_argument("--out", type=Path, help="write the table here too")
    args = parser.parse_args()
    if args.rounds < 2:
        parser.error("--rounds must be at least 2: noise is the spread between a checkout's own runs")
    old_runs: list[dict[Metric, float]] = []
    new_runs: list[dict[Metric, float]] = []
    with tempfile.TemporaryDirectory(prefix="kafkaev-compare-") as scratch:
        for round_index in range(args.rounds):
            order = [("old", args.old, old_runs), ("new", args.new, new_runs)]
            if round_index % 2:
                order.reverse()
            for label, checkout, runs in order:
                print(f"round {round_index + 1}/{args.rounds}: {label} ({checkout})", flush=True)
                report = run_bench(checkout.resolve(), args.brokers, Path(scratch) / f"{label}-{round_index}",
                                   args.scenarios)
                runs.append(figures_of(report))
    table = "\n".join(compare(old_runs, new_runs))
    print(table)
    if args.out is not None:
        args.out.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
