"""The run's outputs: the terminal table, the JSON document and the PNG chart (throughput by value
size, latency percentiles, and each client's latency CDF from its runs' histograms)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.scenarios import E2E_RATES, PEAK_RSS_MB, e2e_scenario_name
from bench.spec import RunResult

LABEL_WIDTH = 32
CELL_WIDTH = 14
ERROR_LINE_WIDTH = 160


def raw_run(result: RunResult) -> dict[str, Any]:
    raw = asdict(result)
    raw.pop("settings")  # kept once per client, not per run
    raw["histogram"] = [[bound if math.isfinite(bound) else "inf", count] for bound, count in result.histogram]
    return raw


def format_value(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    magnitude = abs(value)
    if magnitude >= 1e6:
        return f"{value / 1e6:.2f}M"
    if magnitude >= 1e4:
        return f"{value / 1e3:.1f}K"
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def write_json(document: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(document, indent=1, default=str) + "\n")


def _row(label: str, cells: list[str], width: int = CELL_WIDTH) -> str:
    return f"  {label:<{LABEL_WIDTH}}" + "".join(f"{cell:>{width}}" for cell in cells)


def table(document: dict[str, Any]) -> str:
    """Per scenario: each client's median per metric, then kafkaev's ratio to every other column."""
    lines: list[str] = []
    for name, scenario in document["scenarios"].items():
        labels = list(scenario["clients"])
        width = max(CELL_WIDTH, *(len(label) + 2 for label in labels))
        lines.append(f"{scenario['title']}  [{name}]")
        lines.append(_row("", labels, width))
        for metric in scenario["metrics"]:
            cells = []
            for label in labels:
                client = scenario["clients"][label]
                value = client["median"].get(metric["name"])
                cells.append("FAILED" if value is None and client["errors"] else format_value(value))
            arrow = "^" if metric["higher_is_better"] else "v"  # which way is better
            unit = metric["unit"] if metric["unit"] != "us" else f"{metric['name']} us"
            lines.append(_row(f"{unit} {arrow}", cells, width))
            for subject in (lab for lab in labels if scenario["clients"][lab]["role"] == "subject"):
                ratios = scenario["ratios"].get(metric["name"], {})
                ratio_cells = [
                    "" if label == subject or f"{subject}/{label}" not in ratios
                    else f"{ratios[f'{subject}/{label}']:.2f}x"
                    for label in labels
                ]
                if any(ratio_cells):
                    lines.append(_row(f"  {subject} / column", ratio_cells, width))
        for label in labels:
            for error in scenario["clients"][label]["errors"]:
                lines.append(f"  ! {label}: {error}"[:ERROR_LINE_WIDTH])
        lines.append("")
    lines.append("^ higher is better, v lower is better; 'kafkaev / column' is the ratio of medians.")
    lines.extend(_settings_lines(document))
    lines.append("Every scenario's settings per client: the JSON, scenarios.<name>.clients.<client>.settings")
    return "\n".join(lines)


# The scenarios whose client settings the terminal lists: one of each kind (the size and codec
# sweeps use the throughput settings with another value size or compression).
SETTINGS_SHOWN = ("produce_acks1", "roundtrip", "e2e", "consume")
SETTINGS_HIDDEN = ("bootstrap.servers", "bootstrap_servers", "group.id", "group_id")


def _compact(settings: dict[str, Any]) -> str:
    parts = []
    for key, value in settings.items():
        if key in SETTINGS_HIDDEN:
            continue
        parts.append(f"{key}: {{{_compact(value)}}}" if isinstance(value, dict) else f"{key}={value}")
    return ", ".join(parts)


def _settings_lines(document: dict[str, Any]) -> list[str]:
    lines = ["", "Client settings (each client's documented high-throughput or low-latency configuration):"]
    for name in SETTINGS_SHOWN:
        scenario = document["scenarios"].get(name)
        if scenario is None:
            continue
        lines.append(f"  [{name}]")
        for label, client in scenario["clients"].items():
            if client["settings"]:
                lines.append(f"    {label}: {_compact(client['settings'])}")
    return lines


# One colour per client in every panel, whichever clients a panel happens to have.
CLIENT_COLORS = {"kafkaev": "tab:blue", "kafkaev[on_message]": "tab:blue", "kafkaev[on_batch]": "tab:cyan",
                 "confluent": "tab:orange", "aiokafka": "tab:green", "kafka-python": "tab:red",
                 "java": "tab:brown", "raw-socket": "tab:purple", "asyncio-floor": "tab:pink"}


def _color(label: str) -> str:
    return CLIENT_COLORS.get(label, "tab:gray")


def _series_by_size(document: dict[str, Any], metric: str) -> dict[str, list[tuple[int, float]]]:
    series: dict[str, list[tuple[int, float]]] = {}
    for scenario in document["scenarios"].values():
        if scenario["group"] != "size":
            continue
        size = scenario["params"]["value_size"]
        for label, client in scenario["clients"].items():
            value = client["median"].get(metric)
            if value is not None and client["role"] != "floor":
                series.setdefault(label, []).append((size, value))
    return {label: sorted(points) for label, points in series.items()}


def _latency_panel(axis: Any, scenario: dict[str, Any] | None, title: str) -> None:
    axis.set_title(title)
    if scenario is None:
        axis.set_axis_off()
        return
    percentiles = [m["name"] for m in scenario["metrics"] if m["name"] != PEAK_RSS_MB.name]  # microseconds only
    labels = [lab for lab, c in scenario["clients"].items() if c["median"]]
    width = 0.8 / max(1, len(labels))
    for index, label in enumerate(labels):
        medians = scenario["clients"][label]["median"]
        xs = [i + index * width for i in range(len(percentiles))]
        axis.bar(xs, [medians.get(p, 0) for p in percentiles], width, label=label, color=_color(label))
    axis.set_xticks([i + 0.4 - width / 2 for i in range(len(percentiles))], percentiles)
    axis.set_yscale("log")
    axis.set_ylabel("microseconds (log)")
    axis.legend(fontsize=7)


LATENCY_SCENARIOS = (("roundtrip", "Sequential round trip latency"),
                     *((e2e_scenario_name(rate), f"End-to-end latency at {rate:,} msg/s") for rate in E2E_RATES))


def latency_cdf(client: dict[str, Any]) -> list[tuple[float, float]]:
    """(latency us, fraction of samples at or below it) over every run of one client in one
    scenario, from the runs' histograms; the slower-than-every-bucket samples end it at 1.0
    without a point of their own (their bound is infinite)."""
    counts: dict[float, int] = {}
    for run in client.get("runs", ()):
        for bound, count in run["raw"].get("histogram", ()):
            key = math.inf if bound == "inf" else float(bound)
            counts[key] = counts.get(key, 0) + count
    total = sum(counts.values())
    points: list[tuple[float, float]] = []
    seen = 0
    for bound in sorted(counts):
        seen += counts[bound]
        if math.isfinite(bound):
            points.append((bound, seen / total))
    return points


def _cdf_panel(axis: Any, scenario: dict[str, Any] | None, title: str) -> None:
    axis.set_title(f"{title}: CDF")
    curves = {label: latency_cdf(client) for label, client in (scenario or {}).get("clients", {}).items()}
    curves = {label: points for label, points in curves.items() if points}
    if not curves:
        axis.set_axis_off()
        return
    for label, points in curves.items():
        # a logit axis cannot show 0 or 1: the last point sits half a sample short of 1
        samples = sum(count for run in scenario["clients"][label]["runs"]  # type: ignore[index]
                      for _bound, count in run["raw"].get("histogram", ()))
        top = 1 - 0.5 / max(1, samples)
        ys = [min(max(f, 0.5 / max(1, samples)), top) for _x, f in points]
        axis.step([x for x, _f in points], ys, where="post", label=label, color=_color(label))
    axis.set_xscale("log")
    axis.set_yscale("logit")
    axis.set_xlabel("microseconds (log)")
    axis.set_ylabel("fraction at or below (logit)")
    axis.grid(True, which="major", alpha=0.3)
    axis.legend(fontsize=7)


def chart(document: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Row 0: throughput; rows 1 and 2: each latency scenario's percentiles and CDF, side by side.
    figure, axes = plt.subplots(3, len(LATENCY_SCENARIOS), figsize=(6.5 * len(LATENCY_SCENARIOS), 13))
    for axis in axes[0][2:]:
        axis.set_axis_off()
    for axis, metric, unit in ((axes[0][0], "msgs_per_s", "acked msg/s"), (axes[0][1], "mb_per_s", "MB/s")):
        for label, points in _series_by_size(document, metric).items():
            axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label, color=_color(label))
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("value size (bytes)")
        axis.set_ylabel(unit)
        axis.set_title(f"Pipelined produce acks=1: {unit} by value size")
        axis.legend(fontsize=7)
    scenarios = document["scenarios"]
    for column, (name, title) in enumerate(LATENCY_SCENARIOS):
        _latency_panel(axes[1][column], scenarios.get(name), title)
        _cdf_panel(axes[2][column], scenarios.get(name), title)
    machine = document["machine"]
    figure.suptitle(f"kafkaev bench {document['started']} ({document['mode']}): "
                    f"{machine['cpu']}, {machine['cores']} cores", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def markdown(document: dict[str, Any]) -> str:
    """The two headline figures of every scenario as one markdown table: each client's median and,
    in brackets, kafkaev's ratio to it (for the README)."""
    labels: list[str] = []
    for scenario in document["scenarios"].values():
        for label in scenario["clients"]:
            if label not in labels:
                labels.append(label)
    lines = ["| scenario | metric | " + " | ".join(labels) + " |", "|---|---|" + "---:|" * len(labels)]
    for name, scenario in document["scenarios"].items():
        subjects = [lab for lab, c in scenario["clients"].items() if c["role"] == "subject"]
        # MB/s says the same as msg/s at a fixed value size: show the CPU cost instead
        headline = [m for m in scenario["metrics"] if m["name"] != "mb_per_s"][:2]
        for subject, metric in ((subject, metric) for metric in headline for subject in subjects):
            ratios = scenario["ratios"].get(metric["name"], {})
            cells = []
            for label in labels:
                client = scenario["clients"].get(label)
                value = None if client is None else client["median"].get(metric["name"])
                text = "" if client is None else ("failed" if value is None else format_value(value))
                ratio = ratios.get(f"{subject}/{label}")
                if ratio is not None and client is not None and client["role"] != "subject":
                    text += f" ({ratio:.2f}x)"
                elif client is not None and client["role"] == "subject" and label != subject:
                    text = ""  # the other delivery mode has its own row
                cells.append(text)
            arrow = "↑" if metric["higher_is_better"] else "↓"
            row = name if len(subjects) == 1 else f"{name} {subject}"
            lines.append(f"| {row} | {metric['unit'] if metric['unit'] != 'us' else metric['name'] + ' us'} "
                         f"{arrow} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m bench.report RESULTS.json   (prints the markdown summary table)")
    print(markdown(json.loads(Path(sys.argv[1]).read_text())))
