"""Pictures of boards and training: terminal views with overlays (``terminal``) and PNG
figures (``figures``, matplotlib imported only when one is drawn).

``python -m msjax viz`` is the command line (``msjax.cli.viz``)::

    python -m msjax viz curves runs/NAME            # -> runs/NAME/training_curves.png,
                                                    #    runs/NAME/win_rate_vs_compute.png
    python -m msjax viz heatmap --solver --seed 4 --move 8   # -> mine_probabilities.png
    python -m msjax viz calibration --agent runs/NAME --games 100   # -> reliability.png
"""

from msjax.viz.figures import (
    plot_compute_curve,
    plot_mine_probabilities,
    plot_reliability,
    plot_training_curves,
    plot_win_rate_vs_compute,
    read_metrics,
)
from msjax.viz.terminal import (
    LAYER_NAMES,
    BoardView,
    RankedAction,
    beside,
    board_view,
    cell_symbols,
    describe_action,
    paint,
    probability_digits,
    render_board,
    render_probabilities,
    render_top_actions,
    render_turn,
    status_line,
    strip_ansi,
    top_actions,
    use_color,
    visible_width,
)

__all__ = [
    "LAYER_NAMES",
    "BoardView",
    "RankedAction",
    "beside",
    "board_view",
    "cell_symbols",
    "describe_action",
    "paint",
    "plot_compute_curve",
    "plot_mine_probabilities",
    "plot_reliability",
    "plot_training_curves",
    "plot_win_rate_vs_compute",
    "probability_digits",
    "read_metrics",
    "render_board",
    "render_probabilities",
    "render_top_actions",
    "render_turn",
    "status_line",
    "strip_ansi",
    "top_actions",
    "use_color",
    "visible_width",
]
