"""The pulse: events per second of the open case over the last two minutes, as a
sparkline in the header, so a producer that stalled shows at a glance.

The widget owns its samples and its one-second timer; the screen only tells it which
case is open and how many events it has (`follow`). A new case starts a new line: its
count is no burst of events.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Sparkline, Static

WINDOW_S = 120  # seconds drawn
QUIET_S = 10  # no event for this long after some came: say so


class Pulse(Vertical):
    DEFAULT_CSS = """
    Pulse { width: 30; height: 2; background: $panel; padding: 0 1 0 0; }
    Pulse > Sparkline { height: 1; width: 1fr; }
    Pulse > #pulse-words { height: 1; color: $text-muted; }
    Pulse.-quiet > #pulse-words { color: $warning; text-style: bold; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._case: Path | None = None
        self._count: int | None = None  # the open case's event count, as last told
        self._sampled: int | None = None  # the count at the last sample
        self._rates: deque[float] = deque([0.0] * WINDOW_S, maxlen=WINDOW_S)
        self._quiet = 0  # seconds since the last event

    def compose(self) -> ComposeResult:
        yield Sparkline(list(self._rates), summary_function=max, id="pulse-line")
        yield Static(self.words(), id="pulse-words", markup=False)

    def on_mount(self) -> None:
        self.set_interval(1.0, self.sample)

    def follow(self, case: Path | None, count: int | None) -> None:
        """The open case and its event count now (cheap: called on every snapshot)."""
        if case != self._case:
            self._case, self._sampled = case, None
            self._rates = deque([0.0] * WINDOW_S, maxlen=WINDOW_S)
            self._quiet = 0
            self._show()
        self._count = count

    @property
    def rates(self) -> tuple[float, ...]:
        """Events per second, oldest first (what the line draws)."""
        return tuple(self._rates)

    def sample(self) -> None:
        count = self._count
        if count is None:
            return
        if self._sampled is None or count < self._sampled:  # a first look, or a new file
            self._sampled = count
            return
        delta, self._sampled = count - self._sampled, count
        self._rates.append(float(delta))
        self._quiet = 0 if delta else self._quiet + 1
        self._show()

    def words(self) -> str:
        if not any(self._rates):
            return f"0 events/s \u00b7 last {WINDOW_S // 60} min"
        if self._quiet >= QUIET_S:
            return f"\u26a0 no event for {self._quiet} s"
        return f"{self._rates[-1]:,.0f} events/s \u00b7 peak {max(self._rates):,.0f}"

    def _show(self) -> None:
        if not self.is_mounted:
            return
        self.query_one(Sparkline).data = list(self._rates)
        self.set_class(bool(any(self._rates)) and self._quiet >= QUIET_S, "-quiet")
        self.query_one("#pulse-words", Static).update(Content(self.words()))
