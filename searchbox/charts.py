"""The figure style the app's dashboard (ui/charts.py) and the evaluation reports share: a title, a
height, margins and an empty state. It sits below both so that neither imports the other."""

from __future__ import annotations

import plotly.graph_objects as go

HEIGHT = 280


def layout(figure: go.Figure, title: str, height: int = HEIGHT) -> go.Figure:
    figure.update_layout(title={"text": title, "x": 0.02, "font": {"size": 15}}, height=height,
                         margin={"l": 50, "r": 20, "t": 45, "b": 40},
                         legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1})
    return figure


def empty_figure(title: str, text: str = "no data yet") -> go.Figure:
    """A titled figure that says there is nothing to draw."""
    figure = go.Figure()
    figure.add_annotation(text=text, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                          font={"size": 14, "color": "#9e9e9e"})
    figure.update_xaxes(visible=False)
    figure.update_yaxes(visible=False)
    return layout(figure, title)
