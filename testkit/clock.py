"""A calendar whose day a test sets, for code that asks `datetime.date.today()` (the prompt's day)."""

from __future__ import annotations

import datetime as dt


def fixed_day(day: dt.date) -> type[dt.date]:
    """A `date` class whose today() is `day`, until the test sets its `today_is` to another."""

    class Clock(dt.date):
        today_is = day

        @classmethod
        def today(cls) -> dt.date:
            return cls.today_is

    return Clock
