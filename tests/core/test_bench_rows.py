"""The bench judges a short live run's memory per call begun, against the ten-minute
target's share for each call."""

from codeai_tui.lab.bench import kept_row


def test_what_each_new_call_keeps_is_judged_against_its_share_of_20_mb() -> None:
    label, value, _ratio, target = kept_row(4_542_000, 4286, 30_000, rate=1000)
    assert label.endswith("(model layer, tracemalloc; 4,286 calls)")
    assert value == "1,060 bytes (4.5 MB)"
    # ten minutes at 1,000 events/s with a call every 7 events: 85,720 calls in 20 MB
    assert target == "<= 233 bytes (20 MB in 10 min at this rate)"


def test_no_calls_begun_gives_no_per_call_figure() -> None:
    _label, value, _ratio, target = kept_row(12_000, 0, 0, rate=1000)
    assert value == "0.0 MB"
    assert target == "<= 20 MB (10 min)"


def test_the_console_growth_is_judged_only_over_the_targets_ten_minutes() -> None:
    """The growth comes early, so a shorter run scaled up is no verdict: it shows what
    its rate would reach, and the target says which run judges."""
    from codeai_tui.lab.bench import growth_row
    label, value, _ratio, target, met = growth_row(19.5, 89_552, 600.0, rate=1000)
    assert "89,552 new calls" in label and target == "<= 20 MB in 10 min"
    assert value == "19.5 MB (228 bytes a call)" and met == "met"
    assert growth_row(20.1, 89_552, 600.0, rate=1000)[4] == "MISSED"
    _label, value, _ratio, target, met = growth_row(8.6, 17_911, 120.0, rate=1000)
    assert value == "8.6 MB (503 bytes a call; 43 MB in 10 min at this rate)"
    assert target == "<= 20 MB in 10 min (judged by --live-seconds 600)" and met == ""


def test_the_console_growth_is_judged_by_the_most_it_grew_on_the_way() -> None:
    """A run whose RSS fell before its end (pages handed back to the system) reads less
    at the end than it held: the peak sampled on the way judges."""
    from codeai_tui.lab.bench import growth_row
    _label, value, _ratio, _target, met = growth_row(17.0, 89_552, 600.0, 1000, peak_mb=20.4)
    assert value == "17.0 MB (199 bytes a call; 20.4 MB at most on the way)"
    assert met == "MISSED"
    _label, value, _ratio, _target, met = growth_row(17.0, 89_552, 600.0, 1000, peak_mb=17.0)
    assert value == "17.0 MB (199 bytes a call)" and met == "met"


def test_the_markdown_table_has_one_row_per_measure_and_escapes_bars(capsys) -> None:
    from codeai_tui.lab.bench import judged, print_table
    rows = [judged(("sqlite3 shell: SELECT * FROM events", "0.90 s", "1.0x", "(reference)"),
                   None),
            judged(("inspect --json | a pipe", "4.00 s", "4.4x full scan", "<= 6x full scan"),
                   True)]
    print_table(rows, markdown=True)
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "| measure | median | vs sqlite3 shell scan | target | met |"
    assert lines[1] == "|---|---|---|---|---|"
    assert lines[3] == "| inspect --json \\| a pipe | 4.00 s | 4.4x full scan | <= 6x full scan | met |"
    assert len(lines) == 4


def test_a_cpu_bound_time_shows_the_least_wall_time_its_cpu_allows() -> None:
    """Where a start is bound by CPU, the row says how much it spent and what that
    costs at best on the cores there are."""
    from codeai_tui.lab.bench import with_cpu
    assert with_cpu(8.94, 17.4, 2) == "8.94 s (CPU 17.4 s: >= 8.70 s on 2 cores)"
    assert with_cpu(3.0, 3.0, 1) == "3.00 s (CPU 3.0 s: >= 3.00 s on 1 core)"


def test_the_start_is_measured_part_by_part_and_in_all(tmp_path) -> None:
    """Each part of a start is a row of its own CPU, and the last row adds them up: the
    table says where the CPU of a start bound by it goes."""
    from codeai_tui.lab.bench import start_parts, write_ledger
    case = tmp_path / "case"
    write_ledger(case, 3_000, writers=5, tasks=10)
    rows = start_parts(case, "3,000 events", runs=1)
    parts, total = rows[:-1], rows[-1]
    names = [label.split(": ", 2)[-1] for label, *_ in parts]
    assert names[0] == "the skeleton: the calls' kinds grouped (both halves)"
    assert "every call folded, judged and put in columns (payload rows read and parsed)" in names
    assert names[-1] == "the first snapshot (the receipt check)"
    seconds = [float(value.removesuffix(" s")) for _label, value, *_ in parts]
    assert all(s >= 0 for s in seconds) and max(seconds) > 0
    assert total[0] == "3,000 events: the start's CPU, the parts above together"
    assert abs(float(total[1].removesuffix(" s")) - sum(seconds)) <= 0.005 * len(seconds)
