"""The suite layer of the nightly verdicts (reports/suite.py): one alert per real change,
few false ones whatever the number of figures; pure Python, no cluster."""

import math

import numpy as np
import pytest

from reports import suite, verdicts

GROUP = 8


def suite_histories(rng, figures=400, nights=40, cv=0.05, shared=0.0):
    """Log-normal figures (higher is better) in groups of 8, with a common run effect of
    standard deviation `shared` (log scale) on top of each figure's own noise."""
    sigma = math.sqrt(math.log1p(cv * cv))
    x = (
        sigma * rng.standard_normal((figures, nights))
        + shared * rng.standard_normal(nights)[None, :]
    )
    groups = [f"check{i // GROUP} on fsA [gnu]" for i in range(figures)]
    return x, groups


def judge(x, groups, better="higher"):
    """The suite verdict at a tenth of the default budget: each test's small suite then
    has no false alert of its own (at 0.1 a night in each direction, 1 in 10 would)."""
    runs = [f"r{t:03d}" for t in range(x.shape[1])]
    histories = [
        verdicts.History(list(1000 * np.exp(row)), runs, better, f"s{i}", "bw", "MiB/s")
        for i, row in enumerate(x)
    ]
    return suite.judge(histories, groups, runs, alpha=suite.SUITE_ALPHA / 10)


def test_a_group_that_drops_is_one_alert_naming_its_members_then_ongoing():
    rng = np.random.default_rng(3)
    x, groups = suite_histories(rng, nights=41, shared=0.05)
    x[8:16, -3:] += math.log(0.8)  # check1: all 8 figures 20% lower since r038
    tonight = judge(x[:, :-1], groups)  # its second night
    assert [(a.group, a.direction, a.news) for a in tonight.alerts] == [
        ("check1 on fsA [gnu]", "regression", True)
    ]
    alert = tonight.alerts[0]
    assert sorted(int(m["series"][1:]) for m in alert.members) == list(range(8, 16))
    assert alert.nights == 2 and alert.change_run == "r038"
    assert -0.26 < alert.relative_change < -0.14
    assert tonight.notify and tonight.tests == 400 // GROUP + 400 + 1
    later = judge(x, groups)
    assert [(a.group, a.news) for a in later.alerts] == [("check1 on fsA [gnu]", False)]
    assert not later.notify, "an alert already notified is ongoing, not news"


def test_a_shared_run_effect_and_a_single_bad_night_notify_nothing():
    rng = np.random.default_rng(4)
    x, groups = suite_histories(rng, shared=0.15)  # the run's shift as large as the noise
    x[:, -1] += math.log(0.7)  # tonight everything 30% slower
    x[40:48, -1] += math.log(0.3)  # and one check crashed tonight
    assert judge(x, groups).alerts == []


def test_a_whole_suite_that_moves_is_the_suite_alert_with_the_figures():
    rng = np.random.default_rng(5)
    x, groups = suite_histories(rng, figures=200)
    x[:, -3:] += math.log(0.7)
    alerts = judge(x, groups).alerts
    assert [a.group for a in alerts] == [suite.SUITE_GROUP]
    assert alerts[0].direction == "regression" and len(alerts[0].members) > 150
    assert -0.35 < alerts[0].relative_change < -0.25


def test_lower_is_better_and_identical_histories():
    rng = np.random.default_rng(6)
    x, groups = suite_histories(rng, figures=16)
    x[:8] = 0.0  # check0: identical nights
    x[:8, -2:] = math.log(2.0)  # then twice the time: worse
    tonight = judge(x, groups, better="lower")
    assert [(a.group, a.direction) for a in tonight.alerts] == [
        ("check0 on fsA [gnu]", "regression")
    ]
    assert all(math.isfinite(m["z"]) and abs(m["z"]) < 1e5 for m in tonight.alerts[0].members)
    assert tonight.alerts[0].relative_change == pytest.approx(1.0, rel=0.01)


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="2 histories but 1 group labels"):
        suite.judge(
            [verdicts.History([1.0] * 10, list(range(10)), "higher")] * 2, ["g"], list(range(10))
        )


def test_no_check_logs_a_deprecated_attribute():
    # ReFrame reads every loggable attribute at each log call, and a deprecated one costs
    # a walk of the whole stack (~25 ms): the checks leave them out (SuiteTest).
    import reframe_checks.lib.base as base
    from reframe_checks.lib.kernel import KernelBuild
    from reframe_checks.lib.tools import IORProvider

    for check in (base.ScratchCheck, KernelBuild, IORProvider):
        names = [name for name, _ in check.loggable_attrs()]
        assert "env_vars" in names and "variables" not in names, check
        deprecated = [
            n for n in names if n in check.var_space and check.var_space[n].is_deprecated()
        ]
        assert deprecated == [], (check, deprecated)
        assert "variables" in check.var_space, "ReFrame still has the deprecated alias"


def shared_job_noise(rng, groups, nights, cv=0.15):
    """Log-scale figures of `groups` groups of 8 (CV `cv`): 40% of the variance each
    figure's own, 40% common to the run, 20% common to the group's job that night."""
    sigma = math.sqrt(math.log1p(cv * cv))
    group_of = np.repeat(np.arange(groups), GROUP)
    x = (
        math.sqrt(0.4) * sigma * rng.standard_normal((groups * GROUP, nights))
        + math.sqrt(0.4) * sigma * rng.standard_normal(nights)[None, :]
        + math.sqrt(0.2) * sigma * rng.standard_normal((groups, nights))[group_of]
    )
    return x, group_of


def test_a_change_is_judged_by_the_spread_of_the_nights_before_it():
    """25 of 500 groups, whose job noise does not average out, drop 20% (CV 15%): by
    their 5th night most are notified.  The spread that judges the newest k runs comes
    from the runs before them; measured with the change's own nights (as before), the
    drop hid itself: 13 of 25 with this seed, 21 now."""
    rng = np.random.default_rng(2027)
    x, group_of = shared_job_noise(rng, 500, 65)
    changed = set(range(25))
    x[np.isin(group_of, list(changed)), -5:] += math.log(0.8)
    fired, _ = suite.night(x, np.ones(len(x), dtype=bool), group_of)
    notified = {g for g, direction in fired if direction == "regression"}
    assert len(notified & changed) >= 18
    assert len(notified - changed) <= 1


def test_nights_correlated_as_much_as_0_8_raise_no_alert():
    """AR(1) nights at phi 0.8 on an unchanged suite of 10,000 figures: one history's
    correlation estimate is too low too often at the suite's tail; a figure's is at
    least its group's median (4 false alerts this night before that)."""
    rng = np.random.default_rng(2028)
    figures, nights, phi = 10000, 62, 0.8
    e = rng.standard_normal((figures, nights))
    for t in range(1, nights):
        e[:, t] = phi * e[:, t - 1] + math.sqrt(1 - phi * phi) * e[:, t]
    fired, details = suite.night(0.15 * e, np.ones(figures, dtype=bool), np.arange(figures) // 8)
    assert details["groups"] == figures // 8
    assert not [key for key in fired if key[1] == "regression"], fired
