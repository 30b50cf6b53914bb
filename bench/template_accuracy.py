"""Grouping accuracy of stacklens' template miner on loghub's OpenStack 2k sample.

Reads ``oslo-logs/loghub-2k/OpenStack_2k.log_structured.csv`` from the shared data
folder (``<repo>/../shared/data``, or the folder named by ``$STACKLENS_DATA``); its
``Content`` column is the log message and ``EventId`` the ground-truth template.

Metric: grouping accuracy (Zhu et al., "Tools and Benchmarks for Automated Log
Parsing", ICSE-SEIP 2019): a message is correct iff the set of messages in its
predicted group equals the set in its ground-truth group; the score is the fraction of
correct messages, between 0 and 1.

Compared:

* baseline: plain ``drain3.TemplateMiner`` on the raw message with the loghub
  benchmark's OpenStack settings (its three masking regexes, sim_th 0.5, depth 5;
  every other option at drain3's default).  This reproduces loghub's published Drain
  score for OpenStack (0.733).  With drain3's own defaults (sim_th 0.4, depth 4) the
  same masks score 0.299.
* stacklens: ``stacklens.analyze.templates.TemplateMiner`` with its defaults.

Prints one JSON object (dataset, messages, both accuracies, their ratio, templates
found and in the ground truth).  Exits 1 if the data folder is absent.

Usage: ``python bench/template_accuracy.py``
"""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

import drain3
from drain3.masking import MaskingInstruction
from drain3.template_miner_config import TemplateMinerConfig

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(REPO))

from stacklens.analyze.templates import TemplateMiner, grouping_accuracy  # noqa: E402

DATASET = "loghub-2k/OpenStack_2k"
RELATIVE_CSV = Path("oslo-logs/loghub-2k/OpenStack_2k.log_structured.csv")

#: loghub benchmark settings for OpenStack (logparser, Drain_benchmark.py).
LOGHUB_REGEX = (r"((\d+\.){3}\d+,?)+", r"/.+?\s", r"\d+")
LOGHUB_SIM_TH = 0.5
LOGHUB_DEPTH = 5


def data_dir() -> Path:
    """Shared data folder: ``$STACKLENS_DATA`` or ``<repo>/../shared/data``."""
    env = os.environ.get("STACKLENS_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


def csv_path() -> Path:
    """Path of the loghub OpenStack 2k structured CSV inside ``data_dir()``."""
    return data_dir() / RELATIVE_CSV


def load(path: Path) -> tuple[list[str], list[str]]:
    """Messages (``Content``) and ground-truth ids (``EventId``), in file order."""
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [r["Content"] for r in rows], [r["EventId"] for r in rows]


def baseline_ids(messages: list[str]) -> list[int]:
    """Cluster ids from plain drain3 with the loghub OpenStack settings."""
    config = TemplateMinerConfig()
    config.drain_sim_th = LOGHUB_SIM_TH
    config.drain_depth = LOGHUB_DEPTH
    config.masking_instructions = [MaskingInstruction(rx, "*") for rx in LOGHUB_REGEX]
    miner = drain3.TemplateMiner(persistence_handler=None, config=config)
    return [miner.add_log_message(m)["cluster_id"] for m in messages]


def run(path: Path) -> dict:
    """Score baseline and stacklens on ``path``; return the result object."""
    messages, truth = load(path)
    base = grouping_accuracy(baseline_ids(messages), truth)
    miner = TemplateMiner()
    ours_ids = [miner.add(m) for m in messages]
    ours = grouping_accuracy(ours_ids, truth)
    return {
        "dataset": DATASET,
        "messages": len(messages),
        "baseline_grouping_accuracy": round(base, 4),
        "stacklens_grouping_accuracy": round(ours, 4),
        "ratio": round(ours / base, 4) if base else None,
        "templates_found": len(set(ours_ids)),
        "templates_truth": len(set(truth)),
    }


def main() -> int:
    path = csv_path()
    if not path.is_file():
        print(
            f"template_accuracy: data not found: {path}\n"
            f"  expected the shared data folder at {data_dir()} "
            "(set STACKLENS_DATA to the folder holding oslo-logs/)",
            file=sys.stderr,
        )
        return 1
    print(json.dumps(run(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
