"""The figure style the app's dashboard (ui/charts.py) and the evaluation reports share: a title, a
height, margins, an empty state and the tools' colours. It sits below both so that neither imports the other."""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import plotly.colors
import plotly.graph_objects as go

HEIGHT = 280
# 50 distinct colours, dark ones first (Dark24 reads well on white): more than there are tools, so no
# two tools of the catalog share one, as three pairs did in a 8-colour palette.
_PALETTE = tuple(dict.fromkeys(c.upper() for c in (*plotly.colors.qualitative.Dark24, *plotly.colors.qualitative.Alphabet)))
# bash's programs are shades of bash's colour, so a reader sees at once that they are all bash: the share
# of black (below 0) or white (above 0) mixed in, darker to lighter.
_BASH_SHADES = (-0.45, -0.32, -0.19, -0.06, 0.06, 0.19, 0.32, 0.45)


_TITLE_PAD = 30  # the app's chart frame draws its own label chip in the top left corner: the title below it
_TITLE_BAND = 60  # the top margin the title alone needs, under the chip
_LEGEND_BAND = 60  # more above the plot for a legend of up to three rows (a narrow chart wraps it), under the title


def has_legend(figure: go.Figure) -> bool:
    if figure.layout.showlegend is False:
        return False
    shown = [t for t in figure.data if t.type != "indicator" and t.showlegend is not False]
    return any(t.type == "pie" for t in shown) or len(shown) > 1


def layout(figure: go.Figure, title: str, height: int = HEIGHT) -> go.Figure:
    """The title in the top band; a legend, when there is one, in its own band between the title and the
    plot (in the title's band it was drawn over the title in a narrow chart)."""
    top = _TITLE_BAND + (_LEGEND_BAND if has_legend(figure) else 0)
    figure.update_layout(title={"text": title, "x": 0.02, "y": 1, "yref": "container", "yanchor": "top",
                                "pad": {"t": _TITLE_PAD}, "font": {"size": 15}},
                         # The plot keeps the height it had under a 45 px title band.
                         height=height + top - 45, margin={"l": 50, "r": 20, "t": top, "b": 40},
                         legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "left", "x": 0})
    return figure


def share_text(share: float) -> str:
    """A share of a whole as a reader wants it: two figures at most, and "<1%" for a sliver (0.0478%
    said nothing 0.05% would not, and its length pushed labels into each other)."""
    if share <= 0:
        return "0%"
    if share < 0.01:
        return "<1%"
    return f"{share * 100:.1f}%" if share < 0.1 else f"{share * 100:.0f}%"


def count_step(largest: float, ticks: int = 5) -> int:
    """A whole-number tick step for a count axis up to `largest`: a one-turn run had a tick at 0.5 turn."""
    return max(1, math.ceil(largest / ticks))


def empty_figure(title: str, text: str = "no data yet") -> go.Figure:
    """A titled figure that says there is nothing to draw."""
    figure = go.Figure()
    figure.add_annotation(text=text, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                          font={"size": 14, "color": "#9e9e9e"})
    figure.update_xaxes(visible=False)
    figure.update_yaxes(visible=False)
    return layout(figure, title)


class ToolColors:
    """One fixed colour per tool, taken from its place in the tool catalog, so the same tool has the same
    colour in every chart of the dashboard and the reports. "bash: PROGRAM" is a shade of bash's colour
    picked by the program's name; a name outside the catalog (a tool the model made up) gets one of the
    colours no tool has, picked by its name."""

    def __init__(self, tools: Sequence[str]) -> None:
        if len(tools) > len(_PALETTE):
            raise ValueError(f"{len(tools)} tools but only {len(_PALETTE)} distinct colours: lengthen the palette")
        self._fixed = dict(zip(tools, _PALETTE))
        self._spare = _PALETTE[len(tools):] or _PALETTE
        bash = plotly.colors.hex_to_rgb(self("bash"))
        self._bash = [_mix(bash, share) for share in _BASH_SHADES]

    def __call__(self, name: str) -> str:
        if name in self._fixed:
            return self._fixed[name]
        if name.startswith("bash: "):
            return self._bash[_stable_hash(name) % len(self._bash)]
        return self._spare[_stable_hash(name) % len(self._spare)]


def _mix(rgb: tuple[float, float, float], share: float) -> str:
    other = 255 if share > 0 else 0
    return "#" + "".join(f"{round(c + (other - c) * abs(share)):02X}" for c in rgb)


def _stable_hash(name: str) -> int:
    """The same in every process (Python's hash() of a str is salted per process)."""
    return zlib.crc32(name.encode("utf-8", "surrogatepass"))
