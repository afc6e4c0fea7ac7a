"""Deciding whether two measurements differ: ratio of medians, its interval, a verdict.

A comparison is between a baseline and a candidate, each given as the per-call samples of one
or more workers (``list[list[float]]``: workers, then steady blocks). Above 1 the ratio says
the candidate is slower.

The unit of evidence is the worker (a fresh process): times move between processes far more
than within one (13 % to several hundred % here, docs/evidence.md), so thousands of blocks from
one process say how precisely that process was measured, not whether the code changed.

Variance has three levels (Kalibera & Jones, "Rigorous Benchmarking in Reasonable Time",
ISMM 2013): blocks within a worker, workers within a run, and runs. The first two are in the
data (``Components``). The third is not when each side is one run, measured one after the
other: every worker of a run shares that run's machine state (a neighbour's load, clocks,
memory placement), and the spread between them underestimates the difference between two runs.
Such a comparison adds ``run_drift``, a run-to-run standard deviation measured on A/A pairs of
separate runs (docs/log.md, "Run-to-run drift"), to the variance of the difference; when
the sides' workers alternate in time (``stackwars ab``, or several runs per side that
interleave) the drift hits both sides alike and is in the between-worker spread already.

* With at least ``MIN_WORKERS`` workers per side, the ratio is that of the medians of the
  per-worker medians; its interval is Yuen's trimmed t interval of the difference of the
  20 %-trimmed mean logarithms of the per-worker medians (winsorized variances, degrees of
  freedom of the workers kept, plus ``2 * run_drift**2`` for two single runs, its uncertainty
  counted by Satterthwaite's degrees of freedom; with fewer than 5
  workers a side nothing is trimmed and it is Student's t), and the p-value is that test's.
  Trimming keeps one disturbed worker from swamping the variance; docs/log.md measures
  what it costs. The spread between workers is at least the stack's levels
  (``compare``'s ``levels_sd``): workers that land at two speeds can all land at one on
  each side.
* The verdict reads the interval against the practical threshold ±t (above 1 + t, below
  1 / (1 + t)):

  - ``slower`` / ``faster``: significant, and the whole interval beyond the threshold;
  - ``slower, size unsure`` / ``faster, size unsure``: significant (the interval excludes 1),
    but the interval reaches inside the threshold: the change is real, its size not shown to
    pass the threshold;
  - ``slower, within threshold`` / ``faster, within threshold``: significant, and the
    ``1 - 2 * alpha`` interval lies inside ±t: a real change smaller than the threshold;
  - ``equivalent``: not significant, and the ``1 - 2 * alpha`` interval inside ±t (two one-sided
    tests at ``alpha``: shown to differ by less than the threshold);
  - ``undecided``: neither; ``Comparison.workers_needed`` says how many workers a side would
    likely decide it, from the measured variances (None when more workers of these runs cannot:
    the run-to-run drift alone is wider than the margin);
  - ``inconclusive``: not judged (too few workers, different machines), ``reason`` says why.

* The gate is not a cell's: ``results/comparison.py``'s ``decide`` tests every cell x measure
  of a comparison as one family (``timing/family.py``), with each comparison's one-sided
  p-values (``Comparison.p_above``, ``p_below``).
* Several runs a side: the runs are the units (``compare_run_means``); an A/B session's rounds
  are paired (``compare_paired``, ``timing/sequential.py``).
* With fewer than ``MIN_WORKERS`` workers, the verdict is ``inconclusive`` and says why, unless
  the caller accepts within-process statistics (``within_process=True``): then the ratio is
  that of the pooled medians, the interval a hierarchical bootstrap (resample workers, then
  blocks within each), the test Mann-Whitney U on the pooled blocks (scipy, normal
  approximation with tie and continuity corrections, two-sided), and the same words apply.

NumPy and SciPy are imported inside the functions: this module is analysis of stored results
and runs only in commands that start no worker.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stackwars.timing.sample_size import (
    MIN_WORKERS,
    MOST_WORKERS_ESTIMATED,
    Measured,
    t_quantile,
    workers_needed,
)
from stackwars.timing.sequential import TRIM, Looks, Paired, rounds_at_least

Samples = Sequence[Sequence[float]]  # workers -> per-call block times

DEFAULT_THRESHOLD = 0.05
DEFAULT_ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 2000
# The run-to-run standard deviation (of log times) assumed for two single separate runs:
# measured on six separate runs with other work between them (docs/log.md "Run-to-run
# drift", 2026-11-25: 4.0 % for torch:eager, the stack whose workers spread least; 7.6 % and
# 10.8 % for jax:jit and numpy:eager). An estimate from six runs, not a known constant: it
# enters the interval with its five degrees of freedom (Satterthwaite), so a comparison that
# leans on it is as uncertain as that estimate. Several runs a side need none of it: the runs
# themselves are then the units (``compare_run_means``). --run-drift overrides it.
DEFAULT_RUN_DRIFT = 0.04
DEFAULT_RUN_DRIFT_DF = 5.0

SLOWER, FASTER = "slower", "faster"
SLOWER_UNSURE, FASTER_UNSURE = "slower, size unsure", "faster, size unsure"
SLOWER_SMALL, FASTER_SMALL = "slower, within threshold", "faster, within threshold"
EQUIVALENT, UNDECIDED, INCONCLUSIVE = "equivalent", "undecided", "inconclusive"
SIGNIFICANTLY_SLOWER = (SLOWER, SLOWER_UNSURE, SLOWER_SMALL)
SIGNIFICANTLY_FASTER = (FASTER, FASTER_UNSURE, FASTER_SMALL)
VERDICTS = (*SIGNIFICANTLY_SLOWER, *SIGNIFICANTLY_FASTER, EQUIVALENT, UNDECIDED, INCONCLUSIVE)


@dataclass(frozen=True)
class Components:
    """A cell's variance at each level, as standard deviations of natural logarithms (about
    relative standard deviations): between the medians of fresh workers (both sides pooled),
    of one worker's median from its own blocks (the median over workers), and the run-to-run
    drift the comparison assumed (0 when the sides interleave)."""

    between_workers: float
    within_worker: float
    run_drift: float = 0.0


@dataclass(frozen=True)
class Comparison:
    ratio: float  # median(candidate) / median(baseline); above 1 is slower
    ci_low: float
    ci_high: float
    p_value: float
    verdict: str  # one of VERDICTS (module docstring)
    threshold: float
    unit: str = "worker"  # what the test counts: "worker", "round", "run" or "block"
    workers: tuple[int, int] = (0, 0)  # baseline, candidate
    reason: str = ""  # why the verdict is inconclusive, or what would decide an undecided one
    components: Components | None = None
    workers_needed: int | None = None  # per side, for an undecided verdict (None: unknown)
    # The test's evidence, for the gate's one-sided tests against any bound: the workers'
    # trimmed t (one look) or a session's paired rounds (sequential); None when not judged.
    evidence: LogDifference | Paired | WithinProcess | None = None

    def p_above(self, bound: float) -> float:
        """One-sided p-value against "the log ratio is at most ``bound``" (1: no evidence)."""
        return self.evidence.p_above(bound) if self.evidence is not None else 1.0

    def p_below(self, bound: float) -> float:
        """One-sided p-value against "the log ratio is at least ``bound``" (1: no evidence)."""
        return self.evidence.p_below(bound) if self.evidence is not None else 1.0

    @property
    def significantly_slower(self) -> bool:
        return self.verdict in SIGNIFICANTLY_SLOWER

    def describe(self) -> str:
        change = (self.ratio - 1) * 100
        evidence = (
            f"ratio {self.ratio:.3f} [{self.ci_low:.3f}, {self.ci_high:.3f}], "
            f"p={self.p_value:.2g}, {self.workers[0]}+{self.workers[1]} workers"
        )
        if self.unit == "block":
            evidence += ", within-process"
        text = f"{self.verdict} ({change:+.1f} %, {evidence})"
        return f"{text}: {self.reason}" if self.reason else text


def judge(
    significant: bool,
    ratio: float,
    interval: tuple[float, float],
    equivalence: tuple[float, float],
    threshold: float,
) -> str:
    """The verdict's words (module docstring) from the test's significance, the decision
    interval and the ``1 - 2 * alpha`` interval of the equivalence test."""
    upper, lower = 1 + threshold, 1 / (1 + threshold)
    inside = lower <= equivalence[0] and equivalence[1] <= upper
    if not significant:
        return EQUIVALENT if inside else UNDECIDED
    slower = ratio > 1
    if (interval[0] > upper) if slower else (interval[1] < lower):
        return SLOWER if slower else FASTER
    if inside:
        return SLOWER_SMALL if slower else FASTER_SMALL
    return SLOWER_UNSURE if slower else FASTER_UNSURE


def _pooled(samples: Samples) -> list[float]:
    return [value for worker in samples for value in worker]


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def bootstrap_ratio_ci(
    baseline: Samples,
    candidate: Samples,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile interval of median(candidate)/median(baseline), resampling workers then
    blocks within them."""
    import numpy as np

    rng = np.random.default_rng(seed)
    medians_b = _resampled_medians(rng, baseline, resamples)
    medians_c = _resampled_medians(rng, candidate, resamples)
    ratios = medians_c / medians_b
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap_median_ci(
    samples: Samples,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile interval of the pooled median, resampling workers then blocks."""
    import numpy as np

    medians = _resampled_medians(np.random.default_rng(seed), samples, resamples)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(medians, [tail, 100 - tail])
    return float(low), float(high)


def _resampled_medians(rng: Any, samples: Samples, resamples: int) -> Any:
    import numpy as np

    workers = [np.asarray(worker, dtype=np.float64) for worker in samples if len(worker)]
    if not workers:
        raise ValueError("no samples to compare")
    medians = np.empty(resamples)
    for i in range(resamples):
        chosen = rng.integers(0, len(workers), size=len(workers))
        pooled = np.concatenate(
            [workers[w][rng.integers(0, len(workers[w]), size=len(workers[w]))] for w in chosen]
        )
        medians[i] = np.median(pooled)
    return medians


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test (normal approximation, tie-corrected,
    with continuity correction); 1.0 when every value is the same."""
    from scipy.stats import mannwhitneyu

    if len(a) == 0 or len(b) == 0:
        raise ValueError("the rank test needs samples on both sides")
    if len(set(a) | set(b)) == 1:
        return 1.0  # every value is the same: no evidence of a difference
    result = mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
    return float(result.pvalue)


@dataclass(frozen=True)
class WithinProcess:
    """Blocks of one process (``--within-process``): the rank test's two-sided p-value and the
    direction of the change. It can show a change, never that a cell is within a limit: the
    blocks say nothing of how the next process would land."""

    p_two_sided: float
    slower: bool

    def p_above(self, bound: float) -> float:
        if bound != 0:
            raise ValueError("within-process evidence tests only against no change")
        half = self.p_two_sided / 2
        return half if self.slower else 1 - half

    def p_below(self, bound: float) -> float:
        return 1.0


@dataclass(frozen=True)
class LogDifference:
    """The difference of the trimmed mean log worker medians (candidate minus baseline), its
    standard error and degrees of freedom (a trimmed t test, plus the drift term), and the plain
    pooled standard deviation between workers (for planning and the variance components)."""

    difference: float
    se: float
    df: float
    between_sd: float

    def interval(self, confidence: float) -> tuple[float, float]:
        if self.se == 0:
            return math.exp(self.difference), math.exp(self.difference)
        half = t_quantile(0.5 + confidence / 2, self.df) * self.se
        return math.exp(self.difference - half), math.exp(self.difference + half)

    def p_value(self) -> float:
        from scipy.stats import t as student

        if self.se == 0:
            return 1.0 if self.difference == 0 else 0.0
        return 2 * float(student.sf(abs(self.difference) / self.se, self.df))

    def p_above(self, bound: float) -> float:
        """One-sided p-value against "the log ratio is at most ``bound``" (one look)."""
        from scipy.stats import t as student

        if self.se == 0:
            return 0.0 if self.difference > bound else 1.0
        return float(student.sf((self.difference - bound) / self.se, self.df))

    def p_below(self, bound: float) -> float:
        """One-sided p-value against "the log ratio is at least ``bound``" (one look)."""
        mirrored = LogDifference(-self.difference, self.se, self.df, self.between_sd)
        return mirrored.p_above(-bound)


@dataclass(frozen=True)
class _Trimmed:
    mean: float  # of the kept values
    squared_se: float  # Yuen's d: the winsorized variance over h (h - 1), times n - 1
    kept: int

    @classmethod
    def of(cls, logs: Sequence[float]) -> _Trimmed:
        n, ordered = len(logs), sorted(logs)
        cut = int(TRIM * n)
        kept = ordered[cut : n - cut]
        winsorized = [kept[0]] * cut + kept + [kept[-1]] * cut
        centre = sum(winsorized) / n
        variance = sum((x - centre) ** 2 for x in winsorized) / (n - 1)
        h = len(kept)
        return cls(sum(kept) / h, (n - 1) * variance / (h * (h - 1)), h)


def log_difference(
    baseline: Sequence[float],
    candidate: Sequence[float],
    run_drift: float = 0.0,
    run_drift_df: float = math.inf,
    levels_sd: float = 0.0,
) -> LogDifference:
    """Per-worker medians of both sides (at least 2 each) -> the trimmed t statistic's parts
    on their logarithms: Yuen's standard error, and the pooled test's degrees of freedom over
    the workers kept (Welch's lost a fifth of the one-look gate's power on real workers at 3 a
    side, docs/log.md, at no gain in false alarms). A run-to-run term estimated with
    ``run_drift_df`` degrees of freedom (infinite: given as known) adds its variance and, by
    Satterthwaite's rule, its uncertainty. ``levels_sd`` is a floor under the standard
    deviation between workers (``compare``)."""
    log_b, log_c = [math.log(x) for x in baseline], [math.log(x) for x in candidate]
    side_b, side_c = _Trimmed.of(log_b), _Trimmed.of(log_c)
    floor = levels_sd**2 * (1 / len(log_b) + 1 / len(log_c))
    workers = max(side_b.squared_se + side_c.squared_se, floor)
    drift = 2 * run_drift**2
    workers_df = float(side_b.kept + side_c.kept - 2)
    df = satterthwaite(((workers, workers_df), (drift, run_drift_df)))
    se = math.sqrt(workers + drift)
    between = max(_pooled_sd(log_b, log_c), levels_sd)
    return LogDifference(side_c.mean - side_b.mean, se, df, between)


def satterthwaite(parts: Sequence[tuple[float, float]]) -> float:
    """Degrees of freedom of a sum of variance estimates, each (variance, its df)."""
    total = sum(variance for variance, _ in parts)
    spread = sum(variance**2 / df for variance, df in parts if variance > 0)
    return total**2 / spread if spread > 0 else min(df for _, df in parts)


def compare_run_means(
    baseline: Sequence[Sequence[float]],
    candidate: Sequence[Sequence[float]],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    alpha: float = DEFAULT_ALPHA,
) -> Comparison:
    """Separate runs as the units (``compare A1,A2,A3 B``: a nightly series against a run):
    each run's mean log worker median, and Student's t with the pooled variance of the runs,
    whose spread holds the run-to-run component and the workers' together (a one-way
    random-effects model with its uncertainty in the degrees of freedom, runs less two). Needs
    three runs in all, two on one side."""
    runs = (len(baseline), len(candidate))
    means_b = [_mean_log(run) for run in baseline]
    means_c = [_mean_log(run) for run in candidate]
    ratio = math.exp(sum(means_c) / runs[1] - sum(means_b) / runs[0])
    if sum(runs) < MIN_WORKERS or max(runs) < 2:
        reason = (
            f"{runs[0]} and {runs[1]} run(s): runs as units need three in all, two on one side "
            "(add runs of the baseline, e.g. a nightly series: compare R1,R2,R3 CANDIDATE)"
        )
        return Comparison(
            ratio, math.nan, math.nan, math.nan, INCONCLUSIVE, threshold, "run", runs, reason
        )
    squares = sum((x - sum(means_b) / runs[0]) ** 2 for x in means_b)
    squares += sum((x - sum(means_c) / runs[1]) ** 2 for x in means_c)
    df = float(sum(runs) - 2)
    between = math.sqrt(squares / df)
    se = between * math.sqrt(1 / runs[0] + 1 / runs[1])
    parts = LogDifference(math.log(ratio), se, df, between)
    ci, equivalence = parts.interval(1 - alpha), parts.interval(1 - 2 * alpha)
    p_value = parts.p_value()
    decided = judge(p_value < alpha, ratio, ci, equivalence, threshold)
    reason = "more runs a side would decide it" if decided == UNDECIDED else ""
    components = Components(between, 0.0)
    return Comparison(
        ratio, *ci, p_value, decided, threshold, "run", runs, reason, components, None, parts
    )


def _mean_log(values: Sequence[float]) -> float:
    return sum(math.log(x) for x in values) / len(values)


def _pooled_sd(log_b: Sequence[float], log_c: Sequence[float]) -> float:
    mean_b, mean_c = sum(log_b) / len(log_b), sum(log_c) / len(log_c)
    squares = sum((x - mean_b) ** 2 for x in log_b) + sum((x - mean_c) ** 2 for x in log_c)
    return math.sqrt(squares / (len(log_b) + len(log_c) - 2))


def worker_interval(
    baseline: Sequence[float], candidate: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, float]:
    """(low, high, p): the interval of candidate / baseline from per-worker medians (Yuen's
    trimmed t on their logarithms), and the two-sided p-value of the same test."""
    parts = log_difference(baseline, candidate)
    low, high = parts.interval(confidence)
    return low, high, parts.p_value()


def within_worker_sd(samples: Samples) -> float:
    """How precisely a worker's own blocks fix its median: the standard error of the median of
    the log block times (1.2533 sd / sqrt(n) for a normal sample), the median over workers."""
    errors = []
    for worker in samples:
        if len(worker) < 2:
            continue
        logs = [math.log(x) for x in worker]
        mean = sum(logs) / len(logs)
        sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
        errors.append(1.2533 * sd / math.sqrt(len(logs)))
    return _median(errors) if errors else 0.0


def _undecided_reason(needed: int | None, run_drift: float) -> str:
    if needed is not None:
        return f"about {needed} workers a side would likely decide it"
    if run_drift:
        return (
            f"more workers of these runs would not decide it: the drift between separate runs "
            f"({run_drift * 100:.1f} %) is wider than the margin; compare interleaved workers "
            "('stackwars ab')"
        )
    return f"more than {MOST_WORKERS_ESTIMATED} workers a side would be needed"


def _too_few(workers: tuple[int, int]) -> str:
    return (
        f"{workers[0]} and {workers[1]} worker(s); at least {MIN_WORKERS} fresh workers per "
        "side are needed to tell a change from the variation between processes (run both "
        f"with --repeat {MIN_WORKERS}, or accept within-process statistics with "
        "--within-process)"
    )


def compare(
    baseline: Samples,
    candidate: Samples,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    alpha: float = DEFAULT_ALPHA,
    seed: int = 0,
    within_process: bool = False,
    run_drift: float = 0.0,
    run_drift_df: float = math.inf,
    plan: bool = True,
    levels_sd: float = 0.0,
) -> Comparison:
    """Compare two sets of workers (see the module docstring for the rules); ``run_drift``
    is the run-to-run standard deviation to add when the sides are separate runs, estimated
    with ``run_drift_df`` degrees of freedom (infinite: known); ``plan``: estimate the workers
    that would decide an undecided verdict (a simulation, skipped by callers that judge the
    cell another way).

    ``levels_sd``: the standard deviation between workers is at least this, half the widest
    spread of logarithms the caller saw among one cell's workers of the same stack on one side
    (Popoviciu: no value confined to a range varies more than half its width). Workers land
    on levels: numpy's 2-thread GEMM at 1.35 or about 2.0 ms in a third of its processes, a
    jax:jit worker's peak RSS 60 MiB above its siblings' in three of ten (docs/evidence.md),
    so three workers a side that all landed on one level show no spread at all, and the test
    alone called such a coincidence certain (A/A pairs of separate runs failed on it, p = 4e-10
    for memory, 8e-4 for time). A stack whose workers do not vary keeps the test as sharp."""
    workers = (sum(1 for w in baseline if w), sum(1 for w in candidate if w))
    if within_process:
        return _within_process(
            baseline, candidate, threshold=threshold, alpha=alpha, seed=seed, workers=workers
        )
    medians_b = [_median(w) for w in baseline if w]
    medians_c = [_median(w) for w in candidate if w]
    ratio = _median(medians_c) / _median(medians_b)
    within = within_worker_sd([*baseline, *candidate])
    if min(workers) < MIN_WORKERS:
        ci = bootstrap_ratio_ci(baseline, candidate, seed=seed)
        components = Components(0.0, within, run_drift)
        return Comparison(
            ratio, *ci, math.nan, INCONCLUSIVE, threshold, "worker", workers, _too_few(workers),
            components,
        )  # fmt: skip
    parts = log_difference(medians_b, medians_c, run_drift, run_drift_df, levels_sd)
    ci, equivalence = parts.interval(1 - alpha), parts.interval(1 - 2 * alpha)
    p_value = parts.p_value()
    decided = judge(p_value < alpha, ratio, ci, equivalence, threshold)
    needed, reason = None, ""
    if decided == UNDECIDED and plan:
        measured = Measured(parts.difference, parts.between_sd, run_drift, run_drift_df)
        needed = workers_needed(measured, threshold, alpha)
        reason = _undecided_reason(needed, run_drift)
    if decided == UNDECIDED and levels_sd and parts.between_sd == levels_sd:
        levels = f"this stack's workers land on levels up to {math.expm1(2 * levels_sd):.0%} apart"
        reason = f"{levels}; {reason}" if reason else levels
    components = Components(parts.between_sd, within, run_drift)
    return Comparison(
        ratio, *ci, p_value, decided, threshold, "worker", workers, reason, components, needed,
        parts,
    )  # fmt: skip


def compare_amounts(
    baseline: Sequence[float],
    candidate: Sequence[float],
    levels_sd: float = 0.0,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    alpha: float = DEFAULT_ALPHA,
    plan: bool = True,
) -> Comparison:
    """One amount a worker on each side (a peak of memory), compared as ``compare`` compares
    workers, with the stack's ``levels_sd`` as the floor of their spread. ``plan`` as
    ``compare``'s."""
    return compare(
        [[value] for value in baseline], [[value] for value in candidate], threshold=threshold,
        alpha=alpha, plan=plan, levels_sd=levels_sd,
    )  # fmt: skip


def compare_paired(
    baseline: Sequence[float],
    candidate: Sequence[float],
    looks: Looks,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    alpha: float = DEFAULT_ALPHA,
    indices: Sequence[int] = (),
    trim: float = TRIM,
) -> Comparison:
    """Compare a session's rounds, paired (``timing/sequential.py``): each round's baseline
    and candidate worker medians, in round order (``indices``: the session's round of each,
    where the cell missed some; ``trim``: the trimmed t's, ``Paired``'s). Before the design's
    first look the cell is ``inconclusive`` (its interval is not calibrated for that look)."""
    rounds = len(baseline)
    paired = Paired.of(baseline, candidate, looks, indices, trim)
    workers = (rounds, rounds)
    if rounds < looks.first:
        ratio = math.exp(sum(paired.log_ratios) / rounds) if rounds else math.nan
        reason = (
            f"{rounds} round(s); the session's first look is after round {looks.first} "
            f"(give the session time for {looks.first} rounds: --time-budget, --min-rounds)"
        )
        return Comparison(
            ratio, math.nan, math.nan, math.nan, INCONCLUSIVE, threshold, "round", workers, reason
        )
    estimate, low, high = paired.interval(alpha)
    _, low_eq, high_eq = paired.interval(2 * alpha)
    p_value = min(1.0, 2 * min(paired.p_above(0.0), paired.p_below(0.0)))
    ratio, ci = math.exp(estimate), (math.exp(low), math.exp(high))
    decided = judge(p_value < alpha, ratio, ci, (math.exp(low_eq), math.exp(high_eq)), threshold)
    reason = ""
    if decided == UNDECIDED:
        needed = rounds_at_least(paired.log_ratios, math.log1p(threshold), alpha)
        reason = f"at this spread, at least {needed} rounds would be needed (--max-rounds)"
    spread = Components(_sd(paired.log_ratios), 0.0)
    return Comparison(
        ratio, *ci, p_value, decided, threshold, "round", workers, reason, spread, None, paired
    )


def _sd(values: Sequence[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((x - mean) ** 2 for x in values) / max(len(values) - 1, 1))


def _within_process(
    baseline: Samples,
    candidate: Samples,
    *,
    threshold: float,
    alpha: float,
    seed: int,
    workers: tuple[int, int],
) -> Comparison:
    ci = bootstrap_ratio_ci(baseline, candidate, confidence=1 - alpha, seed=seed)
    equivalence = bootstrap_ratio_ci(baseline, candidate, confidence=1 - 2 * alpha, seed=seed)
    pooled_b, pooled_c = _pooled(baseline), _pooled(candidate)
    ratio = _median(pooled_c) / _median(pooled_b)
    p_value = mann_whitney_p(pooled_b, pooled_c)
    significant = p_value < alpha and not ci[0] <= 1.0 <= ci[1]
    decided = judge(significant, ratio, ci, equivalence, threshold)
    components = Components(0.0, within_worker_sd([*baseline, *candidate]))
    evidence = WithinProcess(p_value if significant else 1.0, ratio > 1)
    return Comparison(
        ratio, *ci, p_value, decided, threshold, "block", workers, components=components,
        evidence=evidence,
    )  # fmt: skip


def geometric_mean(ratios: Sequence[float]) -> float:
    if not ratios:
        raise ValueError("geometric mean of no ratios")
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios))
