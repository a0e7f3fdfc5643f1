"""How well does the comparison tell real slowdowns from noise? (run by hand, not a test)

Simulates base/head sample sets the way a GPU benchmark job produces them and counts how often
a row is flagged 🔴 by perfbot's method (bot.compare.stats.assess, the code `perfbot compare`
runs) and by a plain fixed threshold on the medians' difference.

Noise model, per simulated comparison (a "trial"):
- relative Gaussian noise per sample (1 % or 3 %);
- occasional outliers: 5 % of samples hit by a hiccup that costs 10–40 % of the rate;
- slow drift: the machine's speed wanders linearly by N(0, 2 %) over the job and each job also
  starts from its own level, N(0, 1 %);
- A/B (the default): base and head samples alternate ABAB… in one job, so drift hits both;
  stored baseline (the fallback): base and head come from two jobs, each with its own level and
  drift; our method then also gets the row's history, the medians of 10 earlier base-branch jobs
  simulated the same way, and uses its noise band.
- injected slowdowns of the head: 0, 2, 3, 5, 10 %;
- optionally (``--process-sd``) each worker process's own speed, N(0, σ) held by all the
  samples that process measures (``--per-process``): one worker per side for all its samples, or
  a fresh one per round as ``perfbot ab`` does.

False alarms = flagged at 0 %; detection = flagged at a real slowdown. Goal (issue #4): ≥ 95 %
detection of a 3 % slowdown with ≤ 1 % false alarms, 10 samples per side, 1 % noise.

    python benchmarks/detection.py [--trials 2000] [--samples 10] [--threshold 3]
        [--process-sd PCT --per-process K]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.compare.config import CompareConfig  # noqa: E402
from bot.compare.stats import REGRESSION, assess, noise_band_pct  # noqa: E402

SLOWDOWNS = (0.0, 2.0, 3.0, 5.0, 10.0)
NOISES = (1.0, 3.0)
OUTLIER_P, OUTLIER_COST = 0.05, (0.10, 0.40)
DRIFT_SD, LEVEL_SD = 0.02, 0.01
HISTORY_RUNS = 10


def _job_speed(rng: np.random.Generator, length: int) -> np.ndarray:
    """The machine's relative speed at each of ``length`` measurement slots of one job."""
    level = 1.0 + rng.normal(0, LEVEL_SD)
    slope = rng.normal(0, DRIFT_SD)
    return level * (1.0 + slope * np.linspace(0.0, 1.0, length))


def _samples(rng, rate, speed, noise_pct):
    values = rate * speed * (1.0 + rng.normal(0, noise_pct / 100.0, speed.size))
    hit = rng.random(speed.size) < OUTLIER_P
    values[hit] *= 1.0 - rng.uniform(*OUTLIER_COST, hit.sum())
    return values


def _process_speed(rng, n: int, per_process: int, process_sd_pct: float) -> np.ndarray:
    """Each worker process's own speed, held by its ``per_process`` consecutive samples."""
    if process_sd_pct <= 0:
        return np.ones(n)
    own = 1.0 + rng.normal(0, process_sd_pct / 100.0, -(-n // per_process))
    return np.repeat(own, per_process)[:n]


def simulate(rng, n: int, noise_pct: float, slowdown_pct: float, mode: str,
             process_sd_pct: float = 0.0, per_process: int = 1):
    rate_old, rate_new = 1000.0, 1000.0 * (1.0 - slowdown_pct / 100.0)
    if mode == "ab":
        speed = _job_speed(rng, 2 * n)
        base_speed, head_speed = speed[0::2], speed[1::2]
    else:
        base_speed, head_speed = _job_speed(rng, n), _job_speed(rng, n)
    base_speed = base_speed * _process_speed(rng, n, per_process, process_sd_pct)
    head_speed = head_speed * _process_speed(rng, n, per_process, process_sd_pct)
    return (_samples(rng, rate_old, base_speed, noise_pct),
            _samples(rng, rate_new, head_speed, noise_pct))


def rates(trials: int, n: int, noise: float, slowdown: float, mode: str, threshold: float,
          config: CompareConfig, seed: int, process_sd: float = 0.0,
          per_process: int = 1) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    ours = fixed = 0
    for trial in range(trials):
        base, head = simulate(rng, n, noise, slowdown, mode, process_sd, per_process)
        old, new = float(np.median(base)), float(np.median(head))
        fixed += (new - old) / old * 100.0 < -threshold
        band = None
        if mode == "stored":
            past = [float(np.median(_samples(rng, 1000.0, _job_speed(rng, n), noise)))
                    for _ in range(HISTORY_RUNS)]
            band = noise_band_pct(past, config)
        verdict = assess(list(base), list(head), old, new, threshold, config, band_pct=band,
                         seed=trial)
        ours += verdict.mark == REGRESSION
    return ours / trials, fixed / trials


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=10, help="samples per side")
    parser.add_argument("--threshold", type=float, default=3.0)
    parser.add_argument("--modes", default="ab,stored")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--process-sd", type=float, default=0.0, metavar="PCT",
                        help="each worker process's own speed offset, N(0, PCT %%) (default 0)")
    parser.add_argument("--per-process", type=int, default=1, metavar="K",
                        help="consecutive samples of a side that one worker process measures "
                        "(perfbot ab: 1, a fresh worker per one-sample round; 10: one worker per side)")
    args = parser.parse_args(argv)
    config = CompareConfig(threshold_pct=args.threshold, bootstrap=1000)
    started = time.time()
    print(f"{args.trials} trials per cell, {args.samples} samples per side, threshold "
          f"{args.threshold:g}%, alpha {config.alpha:g}, process offsets {args.process_sd:g}% "
          f"per {args.per_process} sample(s); flagged 🔴 rate, ours / fixed {args.threshold:g}%\n")
    header = "| mode | noise | " + " | ".join(
        "false alarms (0 %)" if s == 0 else f"detect {s:g} %" for s in SLOWDOWNS) + " |"
    print(header)
    print("|" + "---|" * (2 + len(SLOWDOWNS)))
    for mode in args.modes.split(","):
        for noise in NOISES:
            cells = []
            for k, slowdown in enumerate(SLOWDOWNS):
                ours, fixed = rates(args.trials, args.samples, noise, slowdown, mode,
                                    args.threshold, config, args.seed * 1000 + k,
                                    args.process_sd, args.per_process)
                cells.append(f"{ours * 100:.1f} / {fixed * 100:.1f}")
            label = "A/B same job" if mode == "ab" else "stored baseline + history"
            print(f"| {label} | {noise:g} % | " + " | ".join(cells) + " |")
    print(f"\n({time.time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
