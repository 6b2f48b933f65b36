"""The README's screenshots come from a script over the real app; it runs and writes them."""

from PySide6.QtGui import QImage

from tests.desktop.make_screenshots import make_screenshots


def test_the_screenshot_script_writes_three_1280_by_800_pictures(qtbot, tmp_path):
    paths = make_screenshots(tmp_path)
    assert [p.name for p in paths] == [
        "conversation.png",
        "rail-after-compaction.png",
        "context-overlay.png",
    ]
    for path in paths:
        image = QImage(str(path))
        assert (image.width(), image.height()) == (1280, 800)
        colours = {image.pixel(x, y) for x in range(0, 1280, 16) for y in range(0, 800, 16)}
        assert len(colours) > 5
