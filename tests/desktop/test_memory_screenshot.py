"""The memory screenshots come from a script over the real app; it runs and writes them."""

from pathlib import Path

from PySide6.QtGui import QImage

from tests.desktop.make_memory_screenshot import DIALOG_SIZE, make_memory_screenshots


def test_the_memory_screenshot_script_writes_the_review_the_queue_and_the_browser(
    qtbot, tmp_path: Path
):
    paths = make_memory_screenshots(tmp_path)
    assert [p.name for p in paths] == [
        "memory-review.png",
        "memory-queue.png",
        "memory-browser.png",
    ]
    sizes = [(QImage(str(p)).width(), QImage(str(p)).height()) for p in paths]
    assert sizes == [DIALOG_SIZE, (1280, 800), (900, 560)]
